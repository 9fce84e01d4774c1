// Times what requests get from a frozen PostgreSQL: a private cluster (test/support/pg-cluster.ts) frozen with SIGSTOP
// after one successful SCIM Bulk, then several requests at once. `npx tsx bench/frozen-database.ts ['{"SVC_...": "..."}']`
// (extra environment for svc as JSON). Figures: docs/operations.md.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { startPgCluster } from "../test/support/pg-cluster.js";
import { spawnServer } from "../test/support/server.js";

const env = JSON.parse(process.argv[2] ?? "{}");
const cluster = await startPgCluster();
const dataDir = await mkdtemp(path.join(tmpdir(), "svc-measure-"));
const s = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: cluster.url, SVC_SHUTDOWN_GRACE_MS: "1000", ...env });
try {
  const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
  const h = { authorization: `Bearer ${pat}`, "content-type": "application/json" };
  const orgId = ((await (await fetch(`${s.url}/v2/organizations`, { method: "POST", headers: h, body: "{}" })).json()) as { result: { id: string }[] }).result[0]?.id;
  const bulk = (n: number, p: string) =>
    fetch(`${s.url}/scim/v2/${orgId}/Bulk`, {
      method: "POST",
      headers: { ...h, "content-type": "application/scim+json" },
      body: JSON.stringify({
        schemas: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],
        Operations: Array.from({ length: n }, (_, i) => ({
          method: "POST",
          path: "/Users",
          bulkId: `b${i}`,
          data: { schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"], userName: `${p}-${i}`, emails: [{ value: `${p}${i}@e.com` }] },
        })),
      }),
    });
  await bulk(1, "warm");
  const timed = async (name: string, f: () => Promise<Response>) => {
    const t0 = Date.now();
    const r = await f();
    await r.text();
    return `${name}: ${r.status} in ${Date.now() - t0} ms`;
  };
  await cluster.freeze();
  const results = await Promise.all([
    timed("bulk of 4 creates", () => bulk(4, "frozen")),
    timed("REST ListUsers", () => fetch(`${s.url}/v2/users`, { method: "POST", headers: h, body: "{}" })),
    timed("REST create user", () =>
      fetch(`${s.url}/v2/users/new`, { method: "POST", headers: h, body: JSON.stringify({ organizationId: orgId, username: "m1", machine: { name: "m" } }) }),
    ),
    timed("SCIM GET Users", () => fetch(`${s.url}/scim/v2/${orgId}/Users`, { headers: h })),
    timed("token (client_credentials)", () =>
      fetch(`${s.url}/oauth/v2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=client_credentials&client_id=x&client_secret=y",
      }),
    ),
    timed("/readyz", () => fetch(`${s.url}/readyz`)),
  ]);
  console.log(JSON.stringify({ env, loadavg: loadavg(), results }, null, 1));
} finally {
  await cluster.thaw();
  await s.stop();
  await cluster.destroy();
  await rm(dataDir, { recursive: true, force: true });
}
