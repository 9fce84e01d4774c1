// SCIM scenarios: GET of one user, a filtered and sorted list page (one
// client: latency) over an organization of 10,000 human users, single
// creates and Bulk requests of 100 creates. Creates
// carry no password (argon2 would measure the hash, not the path) and get a
// unique userName per request ("[<id>]" in the body).
import type { BenchContext, Scenario } from "../run.js";

const SCIM = { "content-type": "application/scim+json", accept: "application/scim+json" };
const USER_URN = "urn:ietf:params:scim:schemas:core:2.0:User";

const base = (ctx: BenchContext) => `/scim/v2/${ctx.orgId}`;

/** The SCIM scenarios read an organization of this many human users (SCIM does not see the machine half of the seed). */
const HUMANS = 10_000;
let humansReady: Promise<void> | undefined;

/**
 * Tops the organization up to HUMANS human users through SCIM Bulk (100 a
 * request), then refreshes the planner statistics. Once per run. The seed's
 * humans carry the odd numbers (user-1, Family1, ...); these take the even
 * ones (human-0, Family0, ...), so a prefix filter such as "family1" keeps
 * matching about one user in nine.
 */
function ensureHumans(ctx: BenchContext): Promise<void> {
  humansReady ??= (async () => {
    const headers = { authorization: `Bearer ${ctx.pat}`, ...SCIM };
    const count = await fetch(`${ctx.url}${base(ctx)}/Users?count=0`, { headers });
    let have = ((await count.json()) as { totalResults: number }).totalResults;
    for (let k = 0; have < HUMANS; ) {
      const ops = Array.from({ length: Math.min(100, HUMANS - have) }, () => {
        const n = 2 * k++;
        return {
          method: "POST",
          path: "/Users",
          bulkId: `h${n}`,
          data: {
            schemas: [USER_URN],
            userName: `human-${n}`,
            name: { givenName: `Given${n}`, familyName: `Family${n}` },
            emails: [{ value: `human-${n}@example.com`, type: "work", primary: true }],
          },
        };
      });
      const res = await fetch(`${ctx.url}${base(ctx)}/Bulk`, {
        method: "POST",
        headers,
        body: JSON.stringify({ schemas: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"], Operations: ops }),
      });
      if (!res.ok) throw new Error(`seeding SCIM humans: HTTP ${res.status} ${await res.text()}`);
      have += ops.length;
    }
    await ctx.analyze();
  })();
  return humansReady;
}

const user = (userName: string) => ({
  schemas: [USER_URN],
  userName,
  name: { givenName: "Bench", familyName: "Scim" },
  emails: [{ value: `${userName}@example.com`, type: "work", primary: true }],
  active: true,
});

export const SCIM_SCENARIOS: Scenario[] = [
  {
    name: "SCIM GET /Users/{id}",
    method: "GET",
    path: "/scim/v2/{orgId}/Users/{id}",
    headers: { accept: "application/scim+json" },
    // Odd seeds are the humans (machine users do not exist for SCIM).
    setup: async (ctx) => {
      await ensureHumans(ctx);
      return { path: `${base(ctx)}/Users/${ctx.userIds[Math.floor(ctx.userIds.length / 2) | 1]}` };
    },
  },
  {
    // Heavier: case-insensitive prefix on a name (no index can serve ILIKE) and a value path over emails.
    name: "SCIM list filter+sort, 1 client (latency)",
    method: "GET",
    path: "/scim/v2/{orgId}/Users",
    headers: { accept: "application/scim+json" },
    connections: 1,
    setup: async (ctx) => {
      await ensureHumans(ctx);
      return {
        path: `${base(ctx)}/Users?${new URLSearchParams({
          filter: 'name.familyName sw "family1" and active eq true and emails[type eq "work" or value co "@example"]',
          sortBy: "userName",
          sortOrder: "descending",
          startIndex: "11",
          count: "100",
        })}`,
      };
    },
  },
  {
    // The shape provisioners page with: a prefix on userName (served by the usernameLower index), sorted.
    name: "SCIM list userName sw + active, sorted, 1 client (latency)",
    method: "GET",
    path: "/scim/v2/{orgId}/Users",
    headers: { accept: "application/scim+json" },
    connections: 1,
    setup: async (ctx) => {
      await ensureHumans(ctx);
      return { path: `${base(ctx)}/Users?${new URLSearchParams({ filter: 'userName sw "USER-12" and active eq true', sortBy: "userName", count: "100" })}` };
    },
  },
  {
    name: "SCIM create (single, no password)",
    method: "POST",
    path: "/scim/v2/{orgId}/Users",
    headers: SCIM,
    body: JSON.stringify(user("scim-bench-[<id>]")),
    uniqueIds: true,
    setup: (ctx) => ({ path: `${base(ctx)}/Users` }),
  },
  {
    name: "SCIM Bulk of 100 creates (requests/s × 100 = creates/s)",
    method: "POST",
    path: "/scim/v2/{orgId}/Bulk",
    headers: SCIM,
    body: JSON.stringify({
      schemas: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],
      Operations: Array.from({ length: 100 }, (_, i) => ({ method: "POST", path: "/Users", bulkId: `b${i}`, data: user(`scim-bulk-[<id>]-${i}`) })),
    }),
    uniqueIds: true,
    setup: (ctx) => ({ path: `${base(ctx)}/Bulk` }),
  },
];
