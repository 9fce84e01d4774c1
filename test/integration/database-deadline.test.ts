// Issue 25, finding 4: a request's *total* database wait is bounded, not each statement's. On a frozen PostgreSQL (a
// private cluster the test SIGSTOPs) a request that runs several transactions one after another (a SCIM Bulk of
// creates: each operation is atomic on its own and reports its own error) waited for each in turn: n operations ×
// (a statement's bound, or Prisma's wait for a transaction). With SVC_DATABASE_REQUEST_TIMEOUT_MS every statement,
// connection wait and transaction start of one request draws on one budget: the bulk is answered within the budget
// and a little slack, its operations 503, and a plain request is a 503 with Retry-After within the same bound.

import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type PgCluster, pgBinDir, startPgCluster } from "../support/pg-cluster.js";
import { type ChildServer, spawnServer } from "../support/server.js";

const maybe = pgBinDir() ? describe : describe.skip;

/** The request's database budget under test, and the slack allowed on top of it for a loaded machine. */
const BUDGET_MS = 2_000;
const SLACK_MS = 1_500;
const OPERATIONS = 4;

const USER_URN = "urn:ietf:params:scim:schemas:core:2.0:User";
const BULK_URN = "urn:ietf:params:scim:api:messages:2.0:BulkRequest";

maybe("a request's total database wait (private cluster, frozen)", () => {
  let cluster: PgCluster;
  let s: ChildServer;
  let dataDir: string;
  let pat: string;
  let orgId: string;
  const headers = () => ({ authorization: `Bearer ${pat}`, "content-type": "application/json" });

  beforeAll(async () => {
    cluster = await startPgCluster();
    dataDir = await mkdtemp(path.join(tmpdir(), "svc-dbdeadline-"));
    s = await spawnServer({
      SVC_DATA_DIR: dataDir,
      SVC_DATABASE_URL: cluster.url,
      // Each bound alone is within the budget: only their sum over several statements is not.
      SVC_DATABASE_STATEMENT_TIMEOUT_MS: "1000",
      SVC_DATABASE_ACQUIRE_TIMEOUT_MS: "1000",
      SVC_DATABASE_REQUEST_TIMEOUT_MS: String(BUDGET_MS),
      SVC_SHUTDOWN_GRACE_MS: "1000",
    });
    pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
    const orgs = await fetch(`${s.url}/v2/organizations`, { method: "POST", headers: headers(), body: "{}" });
    orgId = ((await orgs.json()) as { result: { id: string }[] }).result[0]?.id as string;
    // The bulk works while the database answers.
    const ok = await bulk(1, "warm");
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { Operations: { status: string }[] }).Operations.map((o) => o.status)).toEqual(["201"]);
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await cluster?.destroy();
    await rm(dataDir, { recursive: true, force: true });
  });

  function bulk(n: number, prefix: string): Promise<Response> {
    const Operations = Array.from({ length: n }, (_, i) => ({
      method: "POST",
      path: "/Users",
      bulkId: `b${i}`,
      data: {
        schemas: [USER_URN],
        userName: `${prefix}-${i}`,
        name: { givenName: "B", familyName: `${i}` },
        emails: [{ value: `${prefix}-${i}@example.com` }],
      },
    }));
    return fetch(`${s.url}/scim/v2/${orgId}/Bulk`, {
      method: "POST",
      headers: { ...headers(), "content-type": "application/scim+json" },
      body: JSON.stringify({ schemas: [BULK_URN], Operations }),
      signal: AbortSignal.timeout(60_000),
    });
  }

  it("a bulk of several creates ends within one budget, each operation 503; a create alone is a 503 within it too", async () => {
    await cluster.freeze();
    try {
      let t0 = Date.now();
      const res = await bulk(OPERATIONS, "frozen");
      const body = (await res.json()) as { Operations: { status: string; response?: { status?: string } }[] };
      const bulkMs = Date.now() - t0;
      expect(res.status).toBe(200);
      expect(body.Operations.map((o) => o.status)).toEqual(Array(OPERATIONS).fill("503"));
      // Before: each operation waited out its own bound (4 × 1–3 s).
      expect(bulkMs).toBeLessThan(BUDGET_MS + SLACK_MS);

      t0 = Date.now();
      const one = await fetch(`${s.url}/v2/users/new`, {
        method: "POST",
        headers: headers(),
        body: JSON.stringify({ organizationId: orgId, username: "deadline-one", machine: { name: "deadline one" } }),
        signal: AbortSignal.timeout(60_000),
      });
      const oneMs = Date.now() - t0;
      expect(one.status).toBe(503);
      // Either the outage's "try again", or — when its INSERT went out on a connection opened before the freeze and got
      // no answer — "outcome unknown" (the server may apply it on thaw; issue 25, finding 5). Both within the budget.
      const reason = ((await one.json()) as { details: { reason: string }[] }).details[0]?.reason;
      const answer = [reason, one.headers.get("retry-after"), one.headers.get("svc-outcome")];
      expect([
        ["Errors.Database.Unavailable", "5", null],
        ["Errors.Database.OutcomeUnknown", null, "unknown"],
      ]).toContainEqual(answer);
      expect(oneMs).toBeLessThan(BUDGET_MS + SLACK_MS);
    } finally {
      await cluster.thaw();
    }
    // Back: the pool replaced the connections it gave up on, and the same bulk succeeds.
    const until = Date.now() + 15_000;
    while ((await fetch(`${s.url}/readyz`)).status !== 200 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    const again = await bulk(2, "thawed");
    expect(((await again.json()) as { Operations: { status: string }[] }).Operations.map((o) => o.status)).toEqual(["201", "201"]);
    expect(s.logs.filter((l) => l.level === 50)).toEqual([]);
  }, 90_000);
});
