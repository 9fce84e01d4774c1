// svc on PostgreSQL through a Unix-domain socket (a server on the same host): SVC_DATABASE_URL in pg's and libpq's
// forms, postgresql://user@/db?host=/dir and postgresql:///db?host=/dir&user=…, both accepted by the configuration
// and served end to end (bootstrap, a user with a password, a session checked against it, readiness), with every
// connection of svc's on the socket. Runs only on PostgreSQL whose socket directory is on this machine
// (SVC_TEST_SOCKET_DIR, default /var/run/postgresql).
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "@jest/globals";
import type { Server } from "../../src/server.js";
import { PG_URL, withPgClient } from "../support/db.js";
import { createHuman, defaultOrgId } from "../support/fixtures.js";
import { loginClient, signIn } from "../support/oidc.js";
import { ok } from "../support/rpc.js";
import { bootOn, freshDatabase, TEST_MASTER_KEY, type TestDatabase, type TestServer } from "../support/server.js";

const SOCKET_DIR = process.env.SVC_TEST_SOCKET_DIR ?? "/var/run/postgresql";
const pg = PG_URL ? new URL(PG_URL) : undefined;
const port = pg?.port || "5432";
const local = pg !== undefined && ["127.0.0.1", "localhost", "[::1]"].includes(pg.hostname) && existsSync(path.join(SOCKET_DIR, `.s.PGSQL.${port}`));

(local ? describe : describe.skip)("PostgreSQL over a Unix-domain socket", () => {
  const user = () => decodeURIComponent(pg?.username || "postgres");
  const forms: [string, (name: string) => string][] = [
    ["postgresql://user@/db?host=/dir", (name) => `postgresql://${encodeURIComponent(user())}@/${name}?host=${SOCKET_DIR}&port=${port}`],
    [
      "postgresql:///db?host=/dir&user=…",
      (name) => `postgresql:///${name}?host=${encodeURIComponent(SOCKET_DIR)}&port=${port}&user=${encodeURIComponent(user())}`,
    ],
  ];

  it.each(forms)("%s: svc starts, signs a user in and answers ready, every connection on the socket", async (_form, url) => {
    // A database of its own each: the first start on it bootstraps the instance and writes the PAT used below.
    const db: TestDatabase = await freshDatabase({ migrated: true });
    const name = decodeURIComponent(new URL(db.url as string).pathname.slice(1));
    const dataDir = await mkdtemp(path.join(tmpdir(), "svc-socket-"));
    let server: Server | undefined;
    try {
      server = await bootOn({ url: undefined, drop: async () => {} }, dataDir, { SVC_DATABASE_URL: url(name), SVC_MASTER_KEY: TEST_MASTER_KEY });
      const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
      const t = { server, url: server.url, pat, dataDir, advanceClock: () => {}, stop: () => Promise.resolve() } as unknown as TestServer;
      const orgId = await defaultOrgId(t);
      const login = await loginClient(t, orgId, "socket-login");
      const userId = await createHuman(t, orgId, "socket-user");
      const domain = (await ok(t, "rest", pat, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
      const session = await signIn(t, login, `socket-user@${domain}`);
      expect(session.sessionId).toBeTruthy();
      expect((await ok(t, "rest", pat, "GetUserByID", { userId })).user.userId).toBe(userId);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
      // svc's connections (its pool, the invalidation listener) came through the socket: no client address.
      const backends = await withPgClient(
        db.url as string,
        async (c) =>
          (
            await c.query<{ tcp: boolean }>(
              "SELECT client_addr IS NOT NULL AS tcp FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
              [name],
            )
          ).rows,
      );
      expect(backends.length).toBeGreaterThan(0);
      expect(backends.filter((b) => b.tcp)).toEqual([]);
    } finally {
      await server?.close();
      await db.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
