// A new embedded database starts as a copy of a snapshot: a PGlite data directory that the build (scripts/build.mjs,
// src/store/make-snapshot.ts) initialised and migrated once, kept in dist/pglite-snapshot as one gzip'd archive
// (pglite.archive.gz: 5 MB for the directory's 42, which is most of what the release tarball installs, and a package
// keeps no empty directories, which PGlite needs). Unpacking it takes a fraction of a second where PGlite's initdb and
// every migration take several. Its manifest names the PGlite version that made it
// and the migrations it holds (by checksum): a snapshot of another PGlite, or one holding a migration that is not
// among the committed ones as they are now, is not used (the database is then initialised as before). Migrations
// committed after the snapshot was made are applied at start like on any existing database.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import { checksum } from "./migrate.js";
import { readMigrations } from "./schema-engine.js";

export const DEFAULT_SNAPSHOT_DIR = path.resolve(import.meta.dirname, "../../dist/pglite-snapshot");
/** The subdirectory with PGlite's files in svc's data directory (and where the snapshot maker makes them). */
export const PGLITE_DIR = "pglite";
/** The snapshot's data directory, packed (packTree), beside its manifest.json. */
export const SNAPSHOT_ARCHIVE = "pglite.archive.gz";

export interface MigrationEntry {
  name: string;
  checksum: string;
}

export interface SnapshotManifest {
  format: 1;
  pglite: string;
  migrations: MigrationEntry[];
}

const DIRECTORY = 0;
const FILE = 1;
const HEADER = 9;

/**
 * A directory tree as one gzip'd buffer: for every directory (empty ones too) and file, in walk order, a header
 * (type: 0 directory, 1 file; the path's length and the content's, unsigned 32-bit little-endian), the relative path
 * in UTF-8 with / between names, then the file's bytes.
 */
export async function packTree(root: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(path.join(root, rel), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      const name = Buffer.from(child, "utf8");
      const body = e.isFile() ? readFileSync(path.join(root, child)) : undefined;
      if (!e.isDirectory() && !body) continue;
      const header = Buffer.alloc(HEADER);
      header.writeUInt8(body ? FILE : DIRECTORY, 0);
      header.writeUInt32LE(name.length, 1);
      header.writeUInt32LE(body?.length ?? 0, 5);
      parts.push(header, name, ...(body ? [body] : []));
      if (e.isDirectory()) walk(child);
    }
  };
  walk("");
  return promisify(gzip)(Buffer.concat(parts), { level: 9 });
}

/**
 * Writes what packTree packed under `to` (created, mode 0700; files 0600). Decompressed in the thread pool; the ~1,200
 * files are then written one after the other (nothing else runs meanwhile at start).
 */
export async function unpackTree(archive: Buffer, to: string): Promise<void> {
  const data = await promisify(gunzip)(archive);
  mkdirSync(to, { mode: 0o700 });
  let at = 0;
  while (at < data.length) {
    if (at + HEADER > data.length) throw new Error("the snapshot archive is truncated");
    const type = data.readUInt8(at);
    const nameLength = data.readUInt32LE(at + 1);
    const size = data.readUInt32LE(at + 5);
    const rel = data.toString("utf8", at + HEADER, at + HEADER + nameLength);
    at += HEADER + nameLength;
    const target = path.resolve(to, rel);
    if ((type !== DIRECTORY && type !== FILE) || !target.startsWith(`${path.resolve(to)}${path.sep}`) || at + size > data.length) {
      throw new Error(`the snapshot archive is damaged at ${JSON.stringify(rel)}`);
    }
    if (type === DIRECTORY) mkdirSync(target, { mode: 0o700 });
    else writeFileSync(target, data.subarray(at, at + size), { mode: 0o600 });
    at += size;
  }
}

/** Packs the data directory `pgDir` into the snapshot directory's archive. */
export async function writeSnapshotArchive(pgDir: string, snapshotDir: string): Promise<void> {
  await writeFile(path.join(snapshotDir, SNAPSHOT_ARCHIVE), await packTree(pgDir));
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
  const source = path.join(snapshotDir, SNAPSHOT_ARCHIVE);
  if (!(await stat(source).catch(() => undefined))) return { seeded: false, fresh: true, reason: `it holds no ${SNAPSHOT_ARCHIVE}` };
  // What a start killed while copying left behind (the caller holds the data directory's lock: no copy is running).
  const parent = path.dirname(pgDir);
  await mkdir(parent, { recursive: true, mode: 0o700 });
  for (const name of await readdir(parent)) {
    if (name.startsWith(`${path.basename(pgDir)}.seed-`)) await rm(path.join(parent, name), { recursive: true, force: true });
  }
  const staging = `${pgDir}.seed-${process.pid}`;
  try {
    await unpackTree(await readFile(source), staging);
  } catch (err) {
    // The build replacing the snapshot meanwhile, say: the database is made the slow way instead.
    await rm(staging, { recursive: true, force: true });
    return { seeded: false, fresh: true, reason: `copying it failed: ${err instanceof Error ? err.message : String(err)}` };
  }
  await rm(pgDir, { recursive: true, force: true });
  await rename(staging, pgDir);
  return { seeded: true, migrations: manifest.migrations.length };
}
