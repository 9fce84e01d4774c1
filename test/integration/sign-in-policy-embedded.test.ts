// Issue 23 asks for the sign-in policy's finding tests on both databases: CI runs every file on PostgreSQL, and this
// file runs the policy's suites again on the embedded one (PGlite) — the lockout reservations, the consent read and the
// pending sessions are SQL that each database must answer alike. Jest gives each test file its own copy of
// process.env and its own module registry, so the support modules imported below read the empty URL.
process.env.SVC_TEST_DATABASE_URL = "";
await import("./sign-in-policy.test.js");
await import("./lockout-hardening.test.js");

const { PG_URL } = await import("../support/db.js");
const { expect, it } = await import("@jest/globals");
it("ran them on the embedded database", () => expect(PG_URL).toBeUndefined());
