// Reads right after a provisioning burst: SVC_BENCH_BURST (10,000) single SCIM creates into the bench organization,
// sent as fast as 16 concurrent clients can, and then, with no ANALYZE in between, GET /Users/{id} and v2 GetUserByID
// of a user of the burst. Single creates, not Bulk: a Bulk of 100 or more makes the server refresh the statistics
// itself, single creates do not, so this measures the plans prepared statements get from the statistics of before
// the burst (autovacuum's ANALYZE comes later, if at all: it is off on the cluster these figures come from). Run them
// alone (`--scenario read-after-burst`): the burst doubles the organization for every scenario after it.
import type { BenchContext, Scenario } from "../run.js";

const SCIM = { "content-type": "application/scim+json", accept: "application/scim+json" };
const CONCURRENCY = 16;

function burstSize(): number {
  const raw = process.env.SVC_BENCH_BURST;
  const n = raw === undefined || raw.trim() === "" ? 10_000 : Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`SVC_BENCH_BURST must be a positive integer, got "${raw}"`);
  return n;
}

let burst: Promise<string> | undefined;

/** Once per run: the burst, and the id of a user in the middle of it. */
function afterBurst(ctx: BenchContext): Promise<string> {
  burst ??= (async () => {
    const total = burstSize();
    const ids: string[] = new Array(total);
    const run = Date.now().toString(36);
    let next = 0;
    const started = Date.now();
    const worker = async () => {
      for (let i = next++; i < total; i = next++) {
        const userName = `burst-${run}-${i}`;
        const res = await fetch(`${ctx.url}/scim/v2/${ctx.orgId}/Users`, {
          method: "POST",
          headers: { authorization: `Bearer ${ctx.pat}`, ...SCIM },
          body: JSON.stringify({
            schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
            userName,
            name: { givenName: "Burst", familyName: `Family${i}` },
            emails: [{ value: `${userName}@example.com`, type: "work", primary: true }],
          }),
        });
        const text = await res.text();
        if (res.status !== 201) throw new Error(`burst create: HTTP ${res.status} ${text.slice(0, 300)}`);
        ids[i] = (JSON.parse(text) as { id: string }).id;
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, total) }, worker));
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(`  burst: ${total} single SCIM creates in ${seconds.toFixed(1)} s (${Math.round(total / seconds)}/s), no ANALYZE after\n`);
    return ids[Math.floor(total / 2)] as string;
  })();
  return burst;
}

export const BURST_SCENARIOS: Scenario[] = [
  {
    name: "read-after-burst: SCIM GET /Users/{id}",
    method: "GET",
    path: "/scim/v2/{orgId}/Users/{id}",
    headers: { accept: "application/scim+json" },
    setup: async (ctx) => ({ path: `/scim/v2/${ctx.orgId}/Users/${await afterBurst(ctx)}` }),
  },
  {
    name: "read-after-burst: v2 GetUserByID (REST)",
    method: "GET",
    path: "/v2/users/{id}",
    setup: async (ctx) => ({ path: `/v2/users/${await afterBurst(ctx)}` }),
  },
];
