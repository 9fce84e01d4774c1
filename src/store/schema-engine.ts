// Prisma's schema engine compiled to WebAssembly, driven through a driver
// adapter. The native engine binary cannot be downloaded everywhere svc is
// built, and the wasm build gives the same migration semantics (including
// Prisma's `_prisma_migrations` history table).
import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";
import type { MigrationList, SchemaEngine } from "@prisma/schema-engine-wasm";
import * as runtime from "@prisma/schema-engine-wasm/schema_engine_bg";

export const MIGRATIONS_DIR = path.resolve(import.meta.dirname, "../../prisma/migrations");
export const SCHEMA_FILE = path.resolve(import.meta.dirname, "../../prisma/schema.prisma");
export const NO_FILTERS = { externalTables: [], externalEnums: [] };

let loaded: Promise<void> | undefined;

// Node has WebAssembly at runtime; @types/node does not declare it without the DOM lib.
interface WasmApi {
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(module: object, imports: Record<string, unknown>): Promise<{ exports: Record<string, unknown> }>;
}
const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/** wasm-bindgen keeps global state, so the module is instantiated once per process. */
function loadWasm(): Promise<void> {
  loaded ??= (async () => {
    const require = createRequire(import.meta.url);
    const wasmPath = path.join(path.dirname(require.resolve("@prisma/schema-engine-wasm/schema_engine_bg")), "schema_engine_bg.wasm");
    const module = await wasmApi.compile(await readFile(wasmPath));
    const instance = await wasmApi.instantiate(module, { "./schema_engine_bg.js": runtime });
    runtime.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
  })();
  return loaded;
}

export async function engineVersion(): Promise<string> {
  await loadWasm();
  return runtime.version();
}

export async function readSchema(): Promise<string> {
  return readFile(SCHEMA_FILE, "utf8");
}

/** The committed migrations in the shape the engine expects (it does no file I/O itself). */
export async function readMigrations(dir = MIGRATIONS_DIR): Promise<MigrationList> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  const migrationDirectories = await Promise.all(
    names.map(async (name) => ({
      path: name,
      migrationFile: {
        path: "migration.sql",
        content: { tag: "ok" as const, value: await readFile(path.join(dir, name, "migration.sql"), "utf8") },
      },
    })),
  );
  const lock = await readFile(path.join(dir, "migration_lock.toml"), "utf8").catch(() => null);
  return {
    baseDir: dir,
    lockfile: { path: "migration_lock.toml", content: lock },
    shadowDbInitScript: "",
    migrationDirectories,
  };
}

export async function openEngine(adapter: SqlMigrationAwareDriverAdapterFactory, schema?: string): Promise<SchemaEngine> {
  await loadWasm();
  const datamodel = schema ?? (await readSchema());
  const log = () => {};
  return runtime.SchemaEngine.new(
    { datamodels: [["schema.prisma", datamodel]] },
    log,
    bindMigrationAwareSqlAdapterFactory(adapter) as never,
  ) as Promise<SchemaEngine>;
}
