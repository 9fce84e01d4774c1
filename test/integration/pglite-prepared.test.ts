// The embedded database's named statements (src/store/pglite-prepared.ts) against PGlite itself: values of every
// kind the hot paths bind come back as node-postgres gives them on PostgreSQL, a statement that fails (a unique
// violation) reports its SQLSTATE and runs again afterwards, concurrent first uses prepare once, and a named
// statement waits for an open transaction instead of running inside it.

import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { preparedDriver } from "../../src/store/pglite-prepared.js";
import { sqlError } from "../../src/store/sql.js";

let db: PGlite;
let driver: ReturnType<typeof preparedDriver>;

beforeAll(async () => {
  db = new PGlite();
  await db.exec(`CREATE TABLE t (id text PRIMARY KEY, n int, b boolean, at timestamptz, h bytea, tags text[], doc jsonb)`);
  driver = preparedDriver(db);
}, 60_000);
afterAll(async () => {
  await db?.close();
});

const insert = (values: unknown[]) =>
  driver.query<{ id: string }>({ name: "t_insert", text: `INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, values });
const read = (id: string) => driver.query<Record<string, unknown>>({ name: "t_read", text: `SELECT * FROM t WHERE id = $1`, values: [id] });

describe("named statements on PGlite", () => {
  it("binds and returns text, numbers, booleans, nulls, timestamps, bytes, text arrays and JSON", async () => {
    const at = new Date("2026-11-27T23:59:58.123Z");
    const h = Buffer.from([0, 1, 2, 254, 255]);
    const tags = ['a "quoted", {braced} tag', "NULL", "", "back\\slash"];
    expect(await insert(["one", 42, true, at, h, tags, { k: ["v", 1] }])).toEqual([{ id: "one" }]);
    const [row] = await read("one");
    expect(row).toEqual({ id: "one", n: 42, b: true, at, h, tags, doc: { k: ["v", 1] } });
    // The same read through PGlite's own query() agrees (bytes as Uint8Array there, a Buffer here).
    const { rows } = await db.query<Record<string, unknown>>(`SELECT * FROM t WHERE id = $1`, ["one"]);
    expect({ ...rows[0], h: Buffer.from(rows[0]?.h as Uint8Array) }).toEqual(row);
    await insert(["two", null, null, null, null, null, null]);
    expect(await read("two")).toEqual([{ id: "two", n: null, b: null, at: null, h: null, tags: null, doc: null }]);
    expect(await read("none")).toEqual([]);
  });

  it("reports a failed run's SQLSTATE, and the statement runs again afterwards", async () => {
    const err = await insert(["one", 1, false, null, null, null, null]).catch((e: unknown) => e);
    expect(sqlError(err).code).toBe("23505");
    expect(await insert(["three", 3, false, null, null, null, null])).toEqual([{ id: "three" }]);
  });

  it("prepares once for concurrent first uses", async () => {
    const q = { name: "t_count", text: `SELECT count(*)::int AS c FROM t WHERE n > $1`, values: [0] };
    const answers = await Promise.all(Array.from({ length: 5 }, () => driver.query<{ c: number }>(q)));
    expect(answers).toEqual(Array.from({ length: 5 }, () => [{ c: 2 }]));
  });

  it("waits for an open transaction instead of running inside it", async () => {
    let outside: Promise<unknown> | undefined;
    await db.transaction(async (tx) => {
      await tx.query(`INSERT INTO t (id) VALUES ('in-tx')`);
      outside = read("in-tx");
      await new Promise((r) => setTimeout(r, 50));
      await tx.rollback();
    });
    expect(await outside).toEqual([]);
  });
});
