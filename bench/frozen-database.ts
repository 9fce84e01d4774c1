// Times what requests get from a failing PostgreSQL: a private cluster (test/support/pg-cluster.ts), after one
// successful SCIM Bulk, frozen with SIGSTOP (`frozen`, the default), stopped (`stopped`) or made read-only
// (`readonly`: default_transaction_read_only, as a standby answers), then several requests at once.
// `npx tsx bench/frozen-database.ts [frozen|stopped|readonly] ['{"SVC_...": "..."}']` (extra environment for svc as
// JSON). Figures: docs/operations.md.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { withPgClient } from "../test/support/db.js";
import { startPgCluster } from "../test/support/pg-cluster.js";
import { spawnServer } from "../test/support/server.js";

const mode = process.argv[2] ?? "frozen";
const env = JSON.parse(process.argv[3] ?? "{}");
const cluster = await startPgCluster();
const dataDir = await mkdtemp(path.join(tmpdir(), "svc-measure-"));
const s = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: cluster.url, SVC_SHUTDOWN_GRACE_MS: "1000", ...env });
try {
  const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
  const h = { authorization: `Bearer ${pat}`, "content-type": "application/json" };
  const orgId = ((await (await fetch(`${s.url}/v2/organizations`, { method: "POST", headers: h, body: "{}" })).json()) as { result: { id: string }[] })
    .result[0]?.id;
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
    const text = await r.text();
    const ops = text.includes("BulkResponse")
      ? ` (operations ${(JSON.parse(text) as { Operations: { status: string }[] }).Operations.map((o) => o.status).join(", ")})`
      : "";
    return `${name}: ${r.status}${ops}, Retry-After ${r.headers.get("retry-after")}, in ${Date.now() - t0} ms`;
  };
  if (mode === "frozen") await cluster.freeze();
  else if (mode === "stopped") await cluster.destroy();
  else
    await withPgClient(cluster.url, async (c) => {
      await c.query("ALTER SYSTEM SET default_transaction_read_only = on");
      await c.query("SELECT pg_reload_conf()");
      await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'");
    });
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
  console.log(JSON.stringify({ mode, env, loadavg: loadavg(), results }, null, 1));
} finally {
  if (mode === "frozen") await cluster.thaw();
  await s.stop();
  await cluster.destroy();
  await rm(dataDir, { recursive: true, force: true });
}
