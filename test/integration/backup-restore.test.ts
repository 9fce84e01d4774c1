// Issue 11, finding 21: the documented backup and restore (README, Backups)
// work. PostgreSQL: pg_dump of a running instance, pg_restore into a new
// database, and svc started on it with the same SVC_MASTER_KEY and
// SVC_EXTERNAL_URL serves the same users and accepts the tokens issued before
// (opaque ones introspect, ID tokens verify against its JWKS). Embedded: the
// data directory copied while svc is stopped (with its master.key) does the same.
import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "@jest/globals";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { PG_URL } from "../support/db.js";
import { pgBinDir } from "../support/pg-cluster.js";
import { type ChildServer, freshDatabase, spawnServer } from "../support/server.js";

const run = promisify(execFile);
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), "svc-backup-"));
  dirs.push(d);
  return d;
}

/** A machine user with a secret, and an opaque access token and an ID token issued to it. */
async function issue(s: ChildServer, pat: string) {
  const headers = { authorization: `Bearer ${pat}`, "content-type": "application/json" };
  const orgs = (await (await fetch(`${s.url}/v2/organizations`, { method: "POST", headers, body: "{}" })).json()) as { result: { id: string }[] };
  const created = await fetch(`${s.url}/v2/users/new`, {
    method: "POST",
    headers,
    body: JSON.stringify({ organizationId: orgs.result[0]?.id, username: "backup-robot", machine: { name: "backup robot" } }),
  });
  const userId = ((await created.json()) as { id: string }).id;
  const secret = ((await (await fetch(`${s.url}/v2/users/${userId}/secret`, { method: "POST", headers, body: "{}" })).json()) as { clientSecret: string })
    .clientSecret;
  const basic = { authorization: `Basic ${Buffer.from(`${userId}:${secret}`).toString("base64")}`, "content-type": "application/x-www-form-urlencoded" };
  const res = await fetch(`${s.url}/oauth/v2/token`, { method: "POST", headers: basic, body: "grant_type=client_credentials&scope=openid" });
  const body = (await res.json()) as { access_token: string; id_token: string };
  return { userId, basic, accessToken: body.access_token, idToken: body.id_token };
}

/** What a restored instance must show: the user, the opaque token active, the ID token verifying against its JWKS. */
async function expectRestored(s: ChildServer, pat: string, before: Awaited<ReturnType<typeof issue>>, issuer: string) {
  const user = await fetch(`${s.url}/v2/users/${before.userId}`, { headers: { authorization: `Bearer ${pat}` } });
  expect(user.status).toBe(200);
  const intro = await fetch(`${s.url}/oauth/v2/introspect`, {
    method: "POST",
    headers: before.basic,
    body: new URLSearchParams({ token: before.accessToken }),
  });
  expect(((await intro.json()) as { active: boolean }).active).toBe(true);
  const { payload } = await jwtVerify(before.idToken, createRemoteJWKSet(new URL(`${s.url}/oauth/v2/keys`)), { issuer });
  expect(payload.sub).toBe(before.userId);
}

const EXTERNAL_URL = "https://id.backup.example";

(PG_URL && pgBinDir() ? describe : describe.skip)("PostgreSQL: pg_dump and pg_restore", () => {
  it("a restored database serves the same users and tokens with the same master key and external URL", async () => {
    const bin = pgBinDir() as string;
    const [source, target] = [await freshDatabase({ migrated: true }), await freshDatabase()];
    const env = { SVC_EXTERNAL_URL: EXTERNAL_URL };
    try {
      const dataDir = await tempDir();
      const a = await spawnServer({ ...env, SVC_DATA_DIR: dataDir, SVC_DATABASE_URL: source.url as string });
      const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
      const before = await issue(a, pat);
      // Online: pg_dump takes a consistent snapshot while svc serves.
      const dump = path.join(await tempDir(), "svc.dump");
      await run(path.join(bin, "pg_dump"), ["--format=custom", "--no-owner", `--file=${dump}`, source.url as string]);
      expect(await a.stop()).toBe(0);
      await run(path.join(bin, "pg_restore"), ["--no-owner", `--dbname=${target.url}`, dump]);
      const b = await spawnServer({ ...env, SVC_DATA_DIR: await tempDir(), SVC_DATABASE_URL: target.url as string });
      try {
        await expectRestored(b, pat, before, EXTERNAL_URL);
      } finally {
        expect(await b.stop()).toBe(0);
      }
    } finally {
      await source.drop();
      await target.drop();
    }
  }, 90_000);
});

describe("embedded: a copy of the stopped data directory", () => {
  it("starts with the same users and tokens (master.key comes along)", async () => {
    const dataDir = path.join(await tempDir(), "data");
    const a = await spawnServer({ SVC_EXTERNAL_URL: EXTERNAL_URL, SVC_DATA_DIR: dataDir });
    const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
    const before = await issue(a, pat);
    expect(await a.stop()).toBe(0);
    const copy = path.join(await tempDir(), "restored");
    await cp(dataDir, copy, { recursive: true, preserveTimestamps: true });
    const b = await spawnServer({ SVC_EXTERNAL_URL: EXTERNAL_URL, SVC_DATA_DIR: copy });
    try {
      await expectRestored(b, pat, before, EXTERNAL_URL);
    } finally {
      expect(await b.stop()).toBe(0);
    }
  }, 90_000);
});
