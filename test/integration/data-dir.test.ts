// Issue 11, findings 18 and 19: the embedded database's files are private to
// svc's user, a data directory others may write is refused, and a master key
// that does not fit the data stops the start with a reason in words.
import { chmod, lstat, mkdir, mkdtemp, readdir, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { PG_URL } from "../support/db.js";
import { freshDatabase, spawnServer } from "../support/server.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), "svc-datadir-"));
  dirs.push(d);
  return d;
}

/** Every path below `dir` whose mode gives group or others any permission. */
async function open(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    const mode = (await lstat(p)).mode & 0o777;
    if (!e.isSymbolicLink() && mode & 0o077) found.push(`${p} ${mode.toString(8)}`);
    if (e.isDirectory()) found.push(...(await open(p)));
  }
  return found;
}

describe("embedded data directory permissions (finding 18)", () => {
  it("refuses a data directory others may write, in words, and writes nothing into it", async () => {
    const dataDir = path.join(await tempDir(), "data");
    await mkdir(dataDir);
    await chmod(dataDir, 0o777);
    await expect(spawnServer({ SVC_DATA_DIR: dataDir })).rejects.toThrow(/may be written by other users \(mode 0777\).*chmod 700/);
    expect(await readdir(dataDir)).toEqual([]);
  });

  it("creates every file 0600 and every directory 0700, and tightens what an earlier start left open", async () => {
    const dataDir = path.join(await tempDir(), "data");
    // Readable by others, as a permissive umask or a copy would leave it.
    await mkdir(dataDir, { mode: 0o755 });
    await chmod(dataDir, 0o755);
    const first = await spawnServer({ SVC_DATA_DIR: dataDir });
    expect(await first.stop()).toBe(0);
    expect(await open(dataDir)).toEqual([]);
    expect((await lstat(dataDir)).mode & 0o777).toBe(0o700);

    // An earlier version (or a restore) left files world-readable and writable.
    const pglite = path.join(dataDir, "pglite");
    const sample = (await readdir(pglite, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).slice(0, 20);
    for (const e of sample) await chmod(path.join(e.parentPath, e.name), 0o666);
    await chmod(pglite, 0o777);
    await writeFile(path.join(pglite, "left-open"), "x", { mode: 0o666 });
    await chmod(path.join(pglite, "left-open"), 0o666);
    const second = await spawnServer({ SVC_DATA_DIR: dataDir });
    expect(await second.stop()).toBe(0);
    expect(await open(dataDir)).toEqual([]);
  });
});

describe("master key mistakes (finding 19)", () => {
  it("embedded: a missing master.key is never replaced by a new one while the database holds sealed keys", async () => {
    const dataDir = path.join(await tempDir(), "data");
    const first = await spawnServer({ SVC_DATA_DIR: dataDir });
    expect(await first.stop()).toBe(0);
    await rename(path.join(dataDir, "master.key"), path.join(dataDir, "master.key.moved"));
    await expect(spawnServer({ SVC_DATA_DIR: dataDir })).rejects.toThrow(/master\.key is missing.*holds keys sealed with a master key/s);
    expect(await readdir(dataDir)).not.toContain("master.key");
    // Put back, it starts again.
    await rename(path.join(dataDir, "master.key.moved"), path.join(dataDir, "master.key"));
    const again = await spawnServer({ SVC_DATA_DIR: dataDir });
    expect(await again.stop()).toBe(0);
  });

  it("embedded: a master key that is not the one the data was sealed with is refused in words", async () => {
    const dataDir = path.join(await tempDir(), "data");
    const first = await spawnServer({ SVC_DATA_DIR: dataDir });
    expect(await first.stop()).toBe(0);
    const other = Buffer.alloc(32, 9).toString("base64");
    const wrong = spawnServer({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: other });
    await expect(wrong).rejects.toThrow(/SVC_MASTER_KEY does not open the keys this database holds/);
    await expect(wrong).rejects.not.toThrow(/Unsupported state or unable to authenticate data/);
  });

  (PG_URL ? it : it.skip)("PostgreSQL: a replica started with another SVC_MASTER_KEY is refused in words", async () => {
    const db = await freshDatabase({ migrated: true });
    try {
      const env = { SVC_DATA_DIR: await tempDir(), SVC_DATABASE_URL: db.url as string };
      const first = await spawnServer(env);
      expect(await first.stop()).toBe(0);
      await expect(spawnServer({ ...env, SVC_MASTER_KEY: Buffer.alloc(32, 3).toString("hex") })).rejects.toThrow(
        /SVC_MASTER_KEY does not open the keys this database holds/,
      );
    } finally {
      await db.drop();
    }
  });

  it("rotation: SVC_MASTER_KEY_PREVIOUS re-seals the keys once; the signing keys (and the JWKS) stay the same", async () => {
    const dataDir = path.join(await tempDir(), "data");
    const [a, b] = [Buffer.alloc(32, 1).toString("base64"), Buffer.alloc(32, 2).toString("base64")];
    const jwks = async (url: string) => (await fetch(`${url}/oauth/v2/keys`)).json();
    const first = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: a });
    const before = await jwks(first.url);
    expect(await first.stop()).toBe(0);
    const rotating = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: b, SVC_MASTER_KEY_PREVIOUS: a });
    expect(rotating.logs.some((l) => typeof l.msg === "string" && l.msg.startsWith("sealed the signing keys again"))).toBe(true);
    expect(await jwks(rotating.url)).toEqual(before);
    expect(await rotating.stop()).toBe(0);
    const after = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: b });
    expect(await jwks(after.url)).toEqual(before);
    expect(await after.stop()).toBe(0);
    await expect(spawnServer({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: a })).rejects.toThrow(/SVC_MASTER_KEY does not open the keys/);
  });
});
