// A new embedded database starts as a copy of a snapshot made once (src/store/snapshot.ts): on real PGlite, the copy
// holds every migration and serves; a snapshot that does not fit (another PGlite, a changed or unknown migration) is
// refused and the database is made the slow way; an existing database is never replaced; a copy cut off halfway is
// cleaned up.
import { cp, mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { openDatabase } from "../../src/store/db.js";
import { makeSnapshot } from "../../src/store/make-snapshot.js";
import { applyMigrations } from "../../src/store/migrate.js";
import { type MigrationEntry, migrationSet, pgliteVersion, type SnapshotManifest, unfit } from "../../src/store/snapshot.js";

let root: string;
let snapshot: string;
let manifest: SnapshotManifest;

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), "svc-snapshot-"));
  snapshot = path.join(root, "snapshot");
  manifest = await makeSnapshot(snapshot);
}, 120_000);
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Opens the embedded database in a new data directory and applies what the migrations table says is missing. */
async function open(snapshotDir: string | null, dataDir?: string) {
  const dir = dataDir ?? (await mkdtemp(path.join(root, "data-")));
  const lines: string[] = [];
  const log = { info: (_fields: object, msg: string) => lines.push(msg) } as never;
  const db = await openDatabase({ dataDir: dir, poolSize: 1, snapshotDir, log });
  try {
    const outcome = await applyMigrations(db);
    const users = await db.prisma.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM "User"`);
    return { dir, lines, applied: outcome.applied, known: outcome.known, users: users[0]?.n };
  } finally {
    await db.close();
  }
}

/** A copy of the snapshot with its manifest changed by `edit`. */
async function variant(name: string, edit: (m: SnapshotManifest) => SnapshotManifest): Promise<string> {
  const dir = path.join(root, name);
  await cp(snapshot, dir, { recursive: true });
  await writeFile(path.join(dir, "manifest.json"), JSON.stringify(edit(structuredClone(manifest))));
  return dir;
}

describe("the snapshot", () => {
  it("records this PGlite and every committed migration", async () => {
    expect(manifest.pglite).toBe(await pgliteVersion());
    expect(manifest.migrations).toEqual(await migrationSet());
    expect(manifest.migrations.length).toBeGreaterThan(10);
    // Nothing of an instance: no lock file, no master key, no PAT beside the data.
    expect((await readdir(snapshot)).sort()).toEqual(["manifest.json", "pglite.archive.gz"]);
  });

  it("starts a new database with every migration applied and none left to apply", async () => {
    const r = await open(snapshot);
    expect(r.lines).toContain("new embedded database: copied from the snapshot");
    expect(r.applied).toEqual([]);
    expect(r.known).toEqual(manifest.migrations.map((m) => m.name));
    expect(r.users).toBe(0);
    // Private like any data directory svc makes.
    expect((await stat(path.join(r.dir, "pglite", "PG_VERSION"))).mode & 0o077).toBe(0);
  }, 60_000);

  it("is not used by another PGlite version: the database is initialised and migrated instead", async () => {
    const other = await variant("other-pglite", (m) => ({ ...m, pglite: "0.0.1" }));
    const r = await open(other);
    expect(r.lines.join("\n")).toMatch(/snapshot is not used \(it was made by PGlite 0\.0\.1 and this is PGlite .+\); initialising one with PGlite's initdb/);
    expect(r.applied).toEqual(manifest.migrations.map((m) => m.name));
  }, 120_000);

  it("is not used when one of its migrations changed since", async () => {
    const changed = await variant("changed", (m) => {
      m.migrations[2] = { name: m.migrations[2]?.name ?? "", checksum: "0".repeat(64) };
      return m;
    });
    const r = await open(changed);
    expect(r.lines.join("\n")).toMatch(/its migration \S+ differs from the committed file/);
    expect(r.applied).toHaveLength(manifest.migrations.length);
  }, 120_000);

  it("is never copied over an existing database", async () => {
    const first = await open(snapshot);
    const marker = path.join(first.dir, "pglite", "PG_VERSION");
    const before = (await stat(marker)).mtimeMs;
    const again = await open(snapshot, first.dir);
    expect(again.lines).toEqual([]);
    expect((await stat(marker)).mtimeMs).toBe(before);
  }, 60_000);

  it("cleans up a copy that a killed start left behind", async () => {
    const dataDir = await mkdtemp(path.join(root, "data-"));
    const leftover = path.join(dataDir, "pglite.seed-999999");
    await mkdir(path.join(leftover, "base"), { recursive: true });
    await writeFile(path.join(leftover, "base", "half"), "x");
    const r = await open(snapshot, dataDir);
    expect(r.lines).toContain("new embedded database: copied from the snapshot");
    expect((await readdir(dataDir)).filter((n) => n.startsWith("pglite"))).toEqual(["pglite"]);
  }, 60_000);

  it("is not used when turned off (null): the database is migrated at start", async () => {
    const r = await open(null);
    expect(r.lines).toEqual(["new embedded database: initialising one with PGlite's initdb, then every migration"]);
    expect(r.applied).toHaveLength(manifest.migrations.length);
  }, 120_000);

  it("without a manifest (none built yet) is not used, and the start says it initialises the database", async () => {
    const empty = path.join(root, "no-manifest");
    await mkdir(empty);
    const r = await open(empty);
    expect(r.lines).toEqual(["new embedded database: initialising one with PGlite's initdb, then every migration"]);
    expect(r.applied).toHaveLength(manifest.migrations.length);
  }, 120_000);
});

describe("whether a snapshot fits", () => {
  const set: MigrationEntry[] = [
    { name: "1_a", checksum: "a".repeat(64) },
    { name: "2_b", checksum: "b".repeat(64) },
    { name: "3_c", checksum: "c".repeat(64) },
  ];
  const of = (migrations: MigrationEntry[], pglite = "1.0.0"): SnapshotManifest => ({ format: 1, pglite, migrations });

  it("fits with the same migrations, or with fewer (those committed since are applied at start)", () => {
    expect(unfit(of(set), "1.0.0", set)).toBeUndefined();
    expect(unfit(of(set.slice(0, 2)), "1.0.0", set)).toBeUndefined();
    expect(unfit(of([]), "1.0.0", set)).toBeUndefined();
  });

  it("does not fit another PGlite, a changed or an unknown migration, or an unknown format", () => {
    expect(unfit(of(set, "1.0.1"), "1.0.0", set)).toMatch(/made by PGlite 1\.0\.1/);
    expect(unfit(of([set[0] as MigrationEntry, { name: "2_b", checksum: "d".repeat(64) }]), "1.0.0", set)).toMatch(/2_b differs/);
    expect(unfit(of(set), "1.0.0", set.slice(0, 2))).toMatch(/3_c, which is not among the committed ones/);
    expect(unfit({ ...of(set), format: 2 as never }, "1.0.0", set)).toMatch(/format 2 is unknown/);
  });
});
