// A new embedded database starts as a copy of a snapshot: a PGlite data directory that the build (scripts/build.mjs,
// src/store/make-snapshot.ts) initialised and migrated once, in dist/pglite-snapshot. Copying it takes a fraction of
// a second where PGlite's initdb and every migration take several. Its manifest names the PGlite version that made it
// and the migrations it holds (by checksum): a snapshot of another PGlite, or one holding a migration that is not
// among the committed ones as they are now, is not used (the database is then initialised as before). Migrations
// committed after the snapshot was made are applied at start like on any existing database.
import { constants, copyFileSync, mkdirSync, readdirSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { checksum } from "./migrate.js";
import { readMigrations } from "./schema-engine.js";

export const DEFAULT_SNAPSHOT_DIR = path.resolve(import.meta.dirname, "../../dist/pglite-snapshot");
/** The subdirectory with PGlite's files, in svc's data directory and in a snapshot (beside its manifest.json) alike. */
export const PGLITE_DIR = "pglite";

export interface MigrationEntry {
  name: string;
  checksum: string;
}

export interface SnapshotManifest {
  format: 1;
  pglite: string;
  migrations: MigrationEntry[];
  /**
   * The data directory's empty directories (pg_tblspc, pg_notify, pg_wal/archive_status, …), relative to it: a
   * package keeps files only (npm pack drops empty directories), and PGlite does not start without them.
   */
  directories?: string[];
}

/** The empty directories under `root`, relative to it, in order. */
export function emptyDirectories(root: string, rel = ""): string[] {
  const entries = readdirSync(path.join(root, rel), { withFileTypes: true });
  if (!entries.length) return rel ? [rel.split(path.sep).join("/")] : [];
  return entries.filter((e) => e.isDirectory()).flatMap((e) => emptyDirectories(root, path.join(rel, e.name)));
}

/** The installed PGlite's version (its package.json, found from the entry point: the package exports no ./package.json). */
export async function pgliteVersion(): Promise<string> {
  let dir = path.dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite"));
  while (dir !== path.dirname(dir)) {
    const pkg = await readFile(path.join(dir, "package.json"), "utf8").catch(() => undefined);
    const parsed = pkg ? (JSON.parse(pkg) as { name?: string; version?: string }) : undefined;
    if (parsed?.name === "@electric-sql/pglite" && parsed.version) return parsed.version;
    dir = path.dirname(dir);
  }
  throw new Error("cannot find the version of @electric-sql/pglite");
}

/** The committed migrations, in order, with the checksums the history table records. */
export async function migrationSet(): Promise<MigrationEntry[]> {
  return (await readMigrations()).migrationDirectories.map((d) => {
    const content = d.migrationFile.content;
    if (content.tag !== "ok") throw new Error(`cannot read migration ${d.path}`);
    return { name: d.path, checksum: checksum(content.value) };
  });
}

/** Why a snapshot cannot start a database for this svc, or undefined when it can. */
export function unfit(manifest: SnapshotManifest, pglite: string, migrations: readonly MigrationEntry[]): string | undefined {
  if (manifest.format !== 1) return `its format ${String(manifest.format)} is unknown`;
  if (manifest.pglite !== pglite) return `it was made by PGlite ${manifest.pglite} and this is PGlite ${pglite}`;
  const current = new Map(migrations.map((m) => [m.name, m.checksum]));
  for (const m of manifest.migrations) {
    if (!current.has(m.name)) return `it holds the migration ${m.name}, which is not among the committed ones`;
    if (current.get(m.name) !== m.checksum) return `its migration ${m.name} differs from the committed file`;
  }
  return undefined;
}

async function readManifest(snapshotDir: string): Promise<SnapshotManifest | undefined> {
  try {
    return JSON.parse(await readFile(path.join(snapshotDir, "manifest.json"), "utf8")) as SnapshotManifest;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

/** Whether `dir` holds no database yet: absent or empty (PGlite creates the directory before initdb). */
export async function isNew(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw err;
  }
}

/**
 * Copies a directory tree, synchronously: some 1,200 files, which fs.cp (a stat, an open and a copy each through the
 * thread pool) took over a second to copy, and this some tens of milliseconds. Nothing else runs meanwhile at start.
 */
function copyTree(from: string, to: string): void {
  mkdirSync(to, { mode: 0o700 });
  for (const e of readdirSync(from, { withFileTypes: true })) {
    if (e.isDirectory()) copyTree(path.join(from, e.name), path.join(to, e.name));
    // A copy-on-write clone where the file system has them (btrfs, XFS), a copy elsewhere.
    else if (e.isFile()) copyFileSync(path.join(from, e.name), path.join(to, e.name), constants.COPYFILE_FICLONE);
  }
}

/** Copied, or not: `fresh` when there is no database yet (PGlite makes one), with the reason a snapshot did not fit. */
export type SeedOutcome = { seeded: true; migrations: number } | { seeded: false; fresh: boolean; reason?: string };

/**
 * Copies the snapshot into `pgDir` when that holds no database yet. The copy goes to a sibling first and is renamed
 * into place: a start killed halfway leaves no partial database behind (the next start copies again). Says why it
 * did not copy a snapshot that exists but does not fit.
 */
export async function seedFromSnapshot(pgDir: string, snapshotDir: string): Promise<SeedOutcome> {
  if (!(await isNew(pgDir))) return { seeded: false, fresh: false };
  const manifest = await readManifest(snapshotDir);
  if (!manifest) return { seeded: false, fresh: true };
  const reason = unfit(manifest, await pgliteVersion(), await migrationSet());
  if (reason) return { seeded: false, fresh: true, reason };
  const source = path.join(snapshotDir, PGLITE_DIR);
  if (!(await stat(path.join(source, "PG_VERSION")).catch(() => undefined))) return { seeded: false, fresh: true, reason: "it holds no data directory" };
  // What a start killed while copying left behind (the caller holds the data directory's lock: no copy is running).
  const parent = path.dirname(pgDir);
  await mkdir(parent, { recursive: true, mode: 0o700 });
  for (const name of await readdir(parent)) {
    if (name.startsWith(`${path.basename(pgDir)}.seed-`)) await rm(path.join(parent, name), { recursive: true, force: true });
  }
  const staging = `${pgDir}.seed-${process.pid}`;
  try {
    copyTree(source, staging);
    for (const dir of manifest.directories ?? []) {
      const rel = path.normalize(dir);
      if (!path.isAbsolute(rel) && !rel.startsWith("..")) mkdirSync(path.join(staging, rel), { recursive: true, mode: 0o700 });
    }
  } catch (err) {
    // The build replacing the snapshot meanwhile, say: the database is made the slow way instead.
    await rm(staging, { recursive: true, force: true });
    return { seeded: false, fresh: true, reason: `copying it failed: ${err instanceof Error ? err.message : String(err)}` };
  }
  await rm(pgDir, { recursive: true, force: true });
  await rename(staging, pgDir);
  return { seeded: true, migrations: manifest.migrations.length };
}
