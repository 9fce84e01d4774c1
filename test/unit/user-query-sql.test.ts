// The store's compiler of the domain's user query to SQL, without a database:
// the condition text and its parameters (values never inside the text).
import { describe, expect, it } from "@jest/globals";
import { checkUserQueries, type UserQuery } from "../../src/domain/identity/user-query.js";
import { userQueriesSql, userQuerySql } from "../../src/store/user-query.js";

const sql = (q: UserQuery) => {
  const s = userQuerySql(q);
  return { text: s.text.replace(/\s+/g, " ").trim(), values: s.values };
};
const match = (method: "equals" | "startsWith" | "contains" | "endsWith", value: string, ignoreCase = false) => ({ method, value, ignoreCase });

describe("userQuerySql", () => {
  it("compares text case-sensitively with = and LIKE, escaping the wildcards", () => {
    expect(sql({ kind: "text", field: "givenName", match: match("equals", "a%") })).toEqual({ text: 'u."givenName" = $1', values: ["a%"] });
    expect(sql({ kind: "text", field: "email", match: match("contains", "a_b") })).toEqual({ text: 'u."email" LIKE $1', values: ["%a\\_b%"] });
    expect(sql({ kind: "text", field: "phone", match: match("endsWith", "\\") })).toEqual({ text: 'u."phone" LIKE $1', values: ["%\\\\"] });
  });

  it("ignores case through lower() where an index can serve it, ILIKE elsewhere", () => {
    expect(sql({ kind: "text", field: "familyName", match: match("equals", "X", true) })).toEqual({ text: 'lower(u."familyName") = lower($1)', values: ["X"] });
    expect(sql({ kind: "text", field: "familyName", match: match("startsWith", "X", true) })).toEqual({
      text: 'lower(u."familyName") LIKE lower($1)',
      values: ["X%"],
    });
    expect(sql({ kind: "text", field: "nickName", match: match("contains", "X", true) })).toEqual({ text: 'u."nickName" ILIKE $1', values: ["%X%"] });
  });

  it("matches usernames ignoring case on the stored lower-cased name", () => {
    expect(sql({ kind: "text", field: "username", match: match("equals", "Ann", true) })).toEqual({ text: 'u."usernameLower" = $1', values: ["ann"] });
    expect(sql({ kind: "text", field: "username", match: match("startsWith", "Ann", true) })).toEqual({
      text: 'lower(u."usernameLower") LIKE $1',
      values: ["ann%"],
    });
    expect(sql({ kind: "text", field: "username", match: match("endsWith", "Ann", true) })).toEqual({ text: 'u."usernameLower" LIKE $1', values: ["%ann"] });
    expect(sql({ kind: "text", field: "username", match: match("equals", "Ann") })).toEqual({ text: 'u."username" = $1', values: ["Ann"] });
  });

  it("matches login names by username or username@primaryDomain", () => {
    const q = sql({ kind: "loginName", match: match("equals", "Ann@Example.com") });
    expect(q.text).toBe(
      '((u."usernameLower" = $1 OR (u."usernameLower" = $2 AND EXISTS (SELECT 1 FROM "Organization" lo WHERE lo."id" = u."orgId" AND lo."primaryDomain" = $3))) AND u."username" = $4)',
    );
    expect(q.values).toEqual(["ann@example.com", "ann", "example.com", "Ann"]);
    expect(sql({ kind: "loginName", match: match("equals", "ann", true) }).text).toBe('((u."usernameLower" = $1))');
  });

  it("compiles the other conditions and the connectives", () => {
    expect(sql({ kind: "ids", ids: ["a", "b"] })).toEqual({ text: 'u."id" = ANY($1::text[])', values: [["a", "b"]] });
    expect(sql({ kind: "state", state: "LOCKED" }).text).toBe('u."state" = $1::"UserState"');
    expect(sql({ kind: "metadataValue", value: new Uint8Array([1]) }).text).toBe(
      'EXISTS (SELECT 1 FROM "UserMetadata" md WHERE md."userId" = u."id" AND md."value" = $1::bytea)',
    );
    expect(sql({ kind: "date", field: "updatedAt", op: "le", value: new Date(0) }).text).toBe('u."updatedAt" <= $1::timestamptz');
    expect(sql({ kind: "present", field: "givenName" }).text).toBe('u."givenName" IS NOT NULL');
    expect(sql({ kind: "or", queries: [] }).text).toBe("FALSE");
    expect(sql({ kind: "and", queries: [] }).text).toBe("TRUE");
    expect(sql({ kind: "not", query: { kind: "org", orgId: "o" } })).toEqual({ text: 'NOT (u."orgId" = $1)', values: ["o"] });
    expect(userQueriesSql([]).text).toBe("TRUE");
    expect(
      userQueriesSql([
        { kind: "org", orgId: "o" },
        { kind: "type", type: "HUMAN" },
      ]).text,
    ).toBe('u."orgId" = $1 AND u."type" = $2::"UserType"');
  });

  it("lets the e-mail index start from the addresses only when every match pins lower(value)", () => {
    const indexed = (where: Extract<UserQuery, { kind: "email" }>["where"]) => !sql({ kind: "email", where }).text.includes("OFFSET 0");
    const v = (m: "equals" | "startsWith" | "contains") => ({ kind: "value" as const, match: match(m, "a", true) });
    expect(indexed(v("equals"))).toBe(true);
    expect(indexed(v("startsWith"))).toBe(true);
    expect(indexed(v("contains"))).toBe(false);
    expect(indexed({ kind: "value", match: match("equals", "a") })).toBe(false);
    expect(indexed({ kind: "and", queries: [v("contains"), v("equals")] })).toBe(true);
    expect(indexed({ kind: "or", queries: [v("contains"), v("equals")] })).toBe(false);
    expect(indexed({ kind: "not", query: v("equals") })).toBe(false);
    expect(indexed({ kind: "and", queries: [] })).toBe(false);
  });
});

describe("checkUserQueries", () => {
  const org: UserQuery = { kind: "org", orgId: "o" };
  it("limits the v2 filters' size, depth and ids", () => {
    expect(() => checkUserQueries(Array.from({ length: 100 }, () => org))).not.toThrow();
    expect(() => checkUserQueries(Array.from({ length: 101 }, () => org))).toThrow(expect.objectContaining({ id: "Errors.Query.TooComplex" }));
    let deep: UserQuery = org;
    for (let i = 0; i < 10; i++) deep = { kind: "not", query: deep };
    expect(() => checkUserQueries([deep])).toThrow(expect.objectContaining({ id: "Errors.Query.TooDeep" }));
    expect(() => checkUserQueries([{ kind: "ids", ids: Array.from({ length: 1001 }, String) }])).toThrow(
      expect.objectContaining({ id: "Errors.Query.TooManyIds" }),
    );
    expect(() => checkUserQueries([{ kind: "loginName", match: match("contains", "a") }])).toThrow(
      expect.objectContaining({ id: "Errors.Query.LoginName.Method" }),
    );
  });
});
