// The admin console's OIDC client is ensured at every start (src/domain/orgs/bootstrap.ts, ensureConsoleClient): the
// first start creates it once; a later start on a database that lacks it (bootstrapped before the console existed)
// creates it; a start with another SVC_EXTERNAL_URL moves its redirect URIs there, still one client; and the line
// announcing readiness names the console's URL and the first administrator's login name.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import type { Server } from "../../src/server.js";
import { ok } from "../support/rpc.js";
import { bootOn, freshDatabase, TEST_MASTER_KEY, type TestDatabase, type TestServer } from "../support/server.js";

let db: TestDatabase;
let dataDir: string;

beforeAll(async () => {
  db = await freshDatabase({ migrated: true });
  dataDir = await mkdtemp(path.join(tmpdir(), "svc-console-client-"));
});
afterAll(async () => {
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

async function boot(externalUrl: string, logs: string[] = []): Promise<{ server: Server; t: TestServer }> {
  const server = await bootOn(db, dataDir, { SVC_EXTERNAL_URL: externalUrl, SVC_MASTER_KEY: TEST_MASTER_KEY }, logs);
  const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
  return { server, t: { server, url: server.url, pat, dataDir, advanceClock: () => {}, stop: () => server.close() } as TestServer };
}

async function consoleApps(t: TestServer): Promise<{ projectId?: string; apps: { id: string; clientId: string; oidc: { redirectUris: string[] } }[] }> {
  const projects = await ok(t, "rest", t.pat, "ListProjects", { queries: [{ nameQuery: { name: "svc console", method: "TEXT_QUERY_METHOD_EQUALS" } }] });
  const projectId = projects.result[0]?.id as string | undefined;
  if (!projectId) return { apps: [] };
  return { projectId, apps: (await ok(t, "rest", t.pat, "ListApplications", { projectId })).result ?? [] };
}

it("creates the console's client at the first start, again when missing, and follows SVC_EXTERNAL_URL", async () => {
  const logs: string[] = [];
  const first = await boot("http://console-one.example:8080", logs);
  const created = await consoleApps(first.t);
  expect(created.apps).toHaveLength(1);
  expect(created.apps[0]?.oidc.redirectUris).toEqual(["http://console-one.example:8080/ui/console/callback"]);
  const ready = logs.map((l) => JSON.parse(l) as { msg: string }).find((l) => l.msg.startsWith("svc listening"));
  expect(ready?.msg).toMatch(/admin console at http:\/\/console-one\.example:8080\/ui\/console\/ \(sign in as admin@[\w.-]+\)/);
  expect(ready?.msg).toContain("; API reference at http://console-one.example:8080/docs");
  await first.server.close();

  // Same URL: nothing changes (the same client id).
  const again = await boot("http://console-one.example:8080");
  expect((await consoleApps(again.t)).apps.map((a) => a.clientId)).toEqual(created.apps.map((a) => a.clientId));
  // A database from before the console: no console client.
  await ok(again.t, "rest", again.t.pat, "DeleteApplication", { projectId: created.projectId, appId: created.apps[0]?.id });
  expect((await consoleApps(again.t)).apps).toHaveLength(0);
  await again.server.close();

  const moved = await boot("https://iam.example.com");
  const now = await consoleApps(moved.t);
  expect(now.projectId).toBe(created.projectId);
  expect(now.apps).toHaveLength(1);
  expect(now.apps[0]?.oidc).toMatchObject({
    redirectUris: ["https://iam.example.com/ui/console/callback"],
    postLogoutRedirectUris: ["https://iam.example.com/ui/console/signed-out"],
  });
  // https: no development mode (JSON leaves a false out).
  expect((now.apps[0]?.oidc as { devMode?: boolean } | undefined)?.devMode ?? false).toBe(false);
  await moved.server.close();

  const back = await boot("http://console-one.example:8080");
  const after = await consoleApps(back.t);
  expect(after.apps.map((a) => a.clientId)).toEqual(now.apps.map((a) => a.clientId));
  expect(after.apps[0]?.oidc).toMatchObject({ redirectUris: ["http://console-one.example:8080/ui/console/callback"], devMode: true });
  await back.server.close();
}, 120_000);
