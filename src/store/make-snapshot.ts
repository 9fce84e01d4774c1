// The snapshot a new embedded database starts from (src/store/snapshot.ts): initialises a new embedded database in <dir>, applies
// every committed migration exactly as a start does, closes it cleanly, packs its data (<dir>/pglite, where a data
// directory keeps it too) into <dir>/pglite.archive.gz and writes manifest.json beside it. Nothing of an
// instance is in it (no keys, no users, no master key): the bootstrap runs at the first start, on the copy.
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { LOCK_NAME } from "./data-dir-lock.js";
import { openDatabase } from "./db.js";
import { applyMigrations } from "./migrate.js";
import { migrationSet, PGLITE_DIR, pgliteVersion, type SnapshotManifest, writeSnapshotArchive } from "./snapshot.js";

export async function makeSnapshot(dir: string): Promise<SnapshotManifest> {
  // No snapshot to start from: this one is made the slow way.
  const db = await openDatabase({ dataDir: dir, poolSize: 1, snapshotDir: null });
  try {
    await applyMigrations(db);
  } finally {
    await db.close();
  }
  // The lock's socket is gone once closed (and an older svc's pid file with it); what stays is the data directory.
  await rm(path.join(dir, LOCK_NAME), { force: true });
  await writeSnapshotArchive(path.join(dir, PGLITE_DIR), dir);
  await rm(path.join(dir, PGLITE_DIR), { recursive: true, force: true });
  const manifest: SnapshotManifest = { format: 1, pglite: await pgliteVersion(), migrations: await migrationSet() };
  await writeFile(path.join(dir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}
