// The committed migrations produce exactly prisma/schema.prisma, on an empty
// database and on a database the service migrated at start.

import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { PrismaPg } from "@prisma/adapter-pg";
import { enginesVersion } from "@prisma/engines-version";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { Prisma } from "../../gen/prisma/client.js";
import type { Database } from "../../src/store/db.js";
import { engineVersion, NO_FILTERS, openEngine, readMigrations, readSchema, SCHEMA_FILE } from "../../src/store/schema-engine.js";
import { query, statement } from "../../src/store/sql.js";
import { PG_URL } from "../support/db.js";
import { startTestServer, type TestServer } from "../support/server.js";

/**
 * adapter-pg cannot decode PostgreSQL's internal "char" type (OID 18) that
 * the engine's catalogue queries return; reading it as text is lossless.
 */
function charAsText(pool: pg.Pool): pg.Pool {
  const patch = (result: unknown) => {
    for (const f of (result as { fields?: { dataTypeID: number }[] })?.fields ?? []) if (f.dataTypeID === 18) f.dataTypeID = 25;
    return result;
  };
  const patchQuery = (target: { query: (...a: unknown[]) => unknown }) => {
    const original = target.query.bind(target);
    target.query = (...args: unknown[]) => {
      const r = original(...args);
      return r instanceof Promise ? r.then(patch) : r;
    };
  };
  patchQuery(pool as unknown as { query: (...a: unknown[]) => unknown });
  pool.on("connect", (client) => patchQuery(client as unknown as { query: (...a: unknown[]) => unknown }));
  return pool;
}

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer({}, { migrateAtStart: true });
});
afterAll(() => t.stop());

describe("migrations", () => {
  it("use the schema engine that matches the installed prisma", async () => {
    expect(await engineVersion()).toBe(enginesVersion);
  });

  it("replayed on an empty database give exactly schema.prisma", async () => {
    const schema = await readSchema();
    const engine = await openEngine(new PrismaPGlite(new PGlite()), schema);
    try {
      const result = await engine.diff({
        from: { tag: "migrations", ...(await readMigrations()) },
        to: { tag: "schemaDatamodel", files: [{ path: SCHEMA_FILE, content: schema }] },
        script: true,
        exitCode: true,
        filters: NO_FILTERS,
      } as never);
      expect(result.stdout).toContain("empty migration");
      expect(result.exitCode).toBe(0);
    } finally {
      engine.free();
    }
  });

  it("leave the database the service migrated at start identical to schema.prisma", async () => {
    const schema = await readSchema();
    let pool: pg.Pool | undefined;
    let adapter: PrismaPg | ReturnType<Database["migrationAdapter"]>["factory"];
    if (PG_URL) {
      const url = (t.server.db as unknown as { kind: string }).kind === "postgres" ? await currentDatabaseUrl() : undefined;
      pool = charAsText(new pg.Pool({ connectionString: url, max: 2 }));
      adapter = new PrismaPg(pool);
    } else {
      // The embedded database is owned by the running server: ask it through its own adapter.
      adapter = t.server.db.migrationAdapter().factory;
    }
    const engine = await openEngine(adapter, schema);
    try {
      const result = await engine.diff({
        from: { tag: "schemaDatasource", files: [{ path: SCHEMA_FILE, content: schema }], configDir: "." },
        to: { tag: "schemaDatamodel", files: [{ path: SCHEMA_FILE, content: schema }] },
        script: true,
        exitCode: true,
        filters: NO_FILTERS,
      } as never);
      expect(result.stdout).toContain("empty migration");
      expect(result.exitCode).toBe(0);
    } finally {
      engine.free();
      await pool?.end();
    }
  });
});

describe("PostgreSQL sessions", () => {
  // A list filter over a large organization passes jit_above_cost; the JIT would cost more than the query.
  (PG_URL ? it : it.skip)("run with JIT compilation off, on the Prisma and the driver paths alike", async () => {
    const viaPrisma = await t.server.db.prisma.$queryRaw<{ jit: string }[]>`SHOW jit`;
    expect(viaPrisma[0]?.jit).toBe("off");
    const viaDriver = await query<{ jit: string }>(t.server.db.prisma, statement(Prisma.sql`SHOW jit`));
    expect(viaDriver[0]?.jit).toBe("off");
  });
});

async function currentDatabaseUrl(): Promise<string> {
  const rows = await t.server.db.prisma.$queryRaw<{ db: string }[]>`SELECT current_database() AS db`;
  const url = new URL(PG_URL as string);
  url.pathname = `/${rows[0]?.db}`;
  return url.toString();
}
