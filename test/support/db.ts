// Each test file gets its own database: a fresh PostgreSQL database when
// SVC_TEST_DATABASE_URL is set, else the embedded database in a temp dir.
import { randomBytes } from "node:crypto";
import pg from "pg";

export const PG_URL = process.env.SVC_TEST_DATABASE_URL || undefined;

export interface TestDatabase {
  url?: string;
  drop(): Promise<void>;
}

export async function freshDatabase(): Promise<TestDatabase> {
  if (!PG_URL) return { url: undefined, drop: async () => {} };
  const name = `svc_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client(PG_URL);
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client(PG_URL);
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
