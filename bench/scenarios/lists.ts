// A v2 list still read through Prisma (count and page in a batch transaction): ListUserGrants, a page of 10 over one
// grant per seeded user (SVC_BENCH_USERS of them) on one project, created through the API once per run.
import type { BenchContext, Scenario } from "../run.js";

const JSON_HEADERS = { "content-type": "application/json" };
const CONCURRENCY = 16;

async function post<T>(ctx: BenchContext, path: string, body: unknown): Promise<T> {
  const res = await fetch(ctx.url + path, { method: "POST", headers: { authorization: `Bearer ${ctx.pat}`, ...JSON_HEADERS }, body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

let grants: Promise<void> | undefined;

function ensureGrants(ctx: BenchContext): Promise<void> {
  grants ??= (async () => {
    const { projectId } = await post<{ projectId: string }>(ctx, "/v2/projects/new", { organizationId: ctx.orgId, name: `bench-grants-${Date.now()}` });
    await post(ctx, `/v2/projects/${projectId}/roles`, { projectId, roleKey: "reader", displayName: "Reader" });
    let next = 0;
    const started = Date.now();
    const worker = async () => {
      for (let i = next++; i < ctx.userIds.length; i = next++) {
        await post(ctx, "/v2/authorizations/new", { userId: ctx.userIds[i], projectId, roleKeys: ["reader"] });
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    process.stderr.write(`  seeded ${ctx.userIds.length} user grants in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    await ctx.analyze();
  })();
  return grants;
}

export const LIST_SCENARIOS: Scenario[] = [
  {
    name: "ListUserGrants page of 10 (Connect JSON)",
    method: "POST",
    path: "/svc.authorization.v2.AuthorizationService/ListUserGrants",
    headers: JSON_HEADERS,
    body: JSON.stringify({ query: { limit: 10 } }),
    setup: async (ctx) => {
      await ensureGrants(ctx);
      return undefined;
    },
  },
];
