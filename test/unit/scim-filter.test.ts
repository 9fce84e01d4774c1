// The SCIM filter parser and its compiler to the domain's user query, without
// a database: the grammar's shapes, precedence, literals, the query each
// filter becomes and the SQL condition the store makes of it.
import { describe, expect, it } from "@jest/globals";
import { parseFilter } from "../../src/http/scim/filter.js";
import { compileFilter, compileSort } from "../../src/http/scim/query.js";
import { scimOrderSql, userQuerySql } from "../../src/store/user-query.js";

const scope = { provisionerId: "p1" };

describe("parseFilter", () => {
  it("binds and tighter than or, not and parentheses group", () => {
    expect(parseFilter('userName eq "a" or userName eq "b" and active eq true')).toEqual({
      kind: "or",
      left: { kind: "compare", attr: "userName", op: "eq", value: "a" },
      right: {
        kind: "and",
        left: { kind: "compare", attr: "userName", op: "eq", value: "b" },
        right: { kind: "compare", attr: "active", op: "eq", value: true },
      },
    });
    expect(parseFilter('not (userName eq "a")')).toEqual({ kind: "not", filter: { kind: "compare", attr: "userName", op: "eq", value: "a" } });
    expect(parseFilter("((active eq false))")).toEqual({ kind: "compare", attr: "active", op: "eq", value: false });
  });

  it("reads value paths, pr, operators case-insensitively and every literal kind", () => {
    expect(parseFilter('emails[type eq "work" and primary eq true]')).toMatchObject({ kind: "valuePath", attr: "emails", filter: { kind: "and" } });
    expect(parseFilter("title PR")).toEqual({ kind: "present", attr: "title" });
    expect(parseFilter("x EQ null")).toMatchObject({ value: null });
    expect(parseFilter("x gt 1.5e2")).toMatchObject({ value: 150 });
    expect(parseFilter('x eq "quote \\" and \\\\ backslash"')).toMatchObject({ value: 'quote " and \\ backslash' });
  });

  it("rejects what is not a filter", () => {
    for (const f of [
      "",
      "userName",
      'userName eq "a" userName',
      "not userName eq 1",
      '"a" eq userName',
      "emails[type eq 1",
      "a.b.c eq 1",
      "userName eq bareword",
    ]) {
      expect(() => parseFilter(f)).toThrow(expect.objectContaining({ scimType: "invalidFilter" }));
    }
  });
});

describe("compileFilter", () => {
  const q = (f: string) => compileFilter(parseFilter(f), scope);
  const ci = (method: string, value: string) => ({ method, ignoreCase: true, value });

  it("maps each attribute onto the user query with SCIM's case rules", () => {
    expect(q('userName eq "Ann"')).toEqual({ kind: "text", field: "username", match: ci("equals", "Ann") });
    expect(q('id sw "a"')).toEqual({ kind: "text", field: "id", match: { method: "startsWith", ignoreCase: false, value: "a" } });
    expect(q('name.givenName ne "x"')).toEqual({ kind: "not", query: { kind: "text", field: "givenName", match: ci("equals", "x") } });
    expect(q('externalId eq "e"')).toEqual({ kind: "externalId", provisionerId: "p1", value: "e" });
    expect(q("externalId pr")).toEqual({ kind: "externalId", provisionerId: "p1" });
    expect(q("active eq false")).toEqual({ kind: "state", state: "INACTIVE" });
    expect(q("active ne false")).toEqual({ kind: "not", query: { kind: "state", state: "INACTIVE" } });
    expect(q('meta.lastModified lt "2026-01-01T00:00:00Z"')).toEqual({ kind: "date", field: "updatedAt", op: "lt", value: new Date("2026-01-01T00:00:00Z") });
    expect(q("name.familyName pr")).toEqual({ kind: "present", field: "familyName" });
    expect(q("userName pr")).toEqual({ kind: "and", queries: [] });
  });

  it("maps e-mails onto one multi-valued condition", () => {
    expect(q('emails co "x"')).toEqual({ kind: "email", where: { kind: "value", match: ci("contains", "x") } });
    expect(q('emails[type eq "work" and not (primary eq false)]')).toEqual({
      kind: "email",
      where: {
        kind: "and",
        queries: [
          { kind: "type", match: ci("equals", "work") },
          { kind: "not", query: { kind: "primary", primary: false } },
        ],
      },
    });
    expect(q("emails pr")).toEqual({ kind: "email", where: { kind: "and", queries: [] } });
    expect(q("emails[type pr]")).toEqual({ kind: "email", where: { kind: "typePresent" } });
  });

  it("refuses operators outside the spec's table", () => {
    for (const f of [
      'userName gt "a"',
      'externalId sw "a"',
      "active gt true",
      'meta.created sw "2026"',
      'displayName eq "a"',
      'emails[display eq "a"]',
      'emails[type co "w"]',
      'emails[value[type eq "a"]]',
      "userName eq 1",
      'meta.created gt "yesterday"',
      'phoneNumbers[type eq "work"]',
    ]) {
      expect(() => q(f)).toThrow(expect.objectContaining({ scimType: "invalidFilter" }));
    }
  });

  // Through the store's compiler: values always travel as parameters, never inside the text.
  const sql = (f: string) => {
    const s = userQuerySql(q(f));
    return { text: s.text.replace(/\s+/g, " ").trim(), values: s.values };
  };
  it("becomes the SQL condition the indexes serve", () => {
    expect(sql('emails[type eq "work" and value co "a_b"]')).toEqual({
      text: 'EXISTS (SELECT 1 FROM "UserEmail" e WHERE e."userId" = u."id" AND (lower(e."type") = lower($1) AND e."value" ILIKE $2) OFFSET 0)',
      values: ["work", "%a\\_b%"],
    });
    expect(sql('userName sw "A%"')).toEqual({ text: 'lower(u."usernameLower") LIKE $1', values: ["a\\%%"] });
    expect(sql('userName eq "Ann"')).toEqual({ text: 'u."usernameLower" = $1', values: ["ann"] });
    expect(sql('externalId eq "x"')).toEqual({
      text: 'EXISTS (SELECT 1 FROM "ScimExternalId" x WHERE x."userId" = u."id" AND x."provisionerId" = $1 AND x."externalId" = $2)',
      values: ["p1", "x"],
    });
    expect(sql('externalId ne "x"').text).toMatch(/^NOT \(EXISTS/);
    expect(sql('meta.created ge "2026-01-01T00:00:00Z"')).toEqual({ text: 'u."createdAt" >= $1::timestamptz', values: [new Date("2026-01-01T00:00:00Z")] });
    expect(sql('not (name.familyName ne "O\'Brien") or active eq false')).toEqual({
      text: '(NOT (NOT (lower(u."familyName") = lower($1))) OR u."state" = $2::"UserState")',
      values: ["O'Brien", "INACTIVE"],
    });
    expect(sql('name.givenName sw "Ab_"')).toEqual({ text: 'lower(u."givenName") LIKE lower($1)', values: ["Ab\\_%"] });
    expect(sql('emails ew "@x.org"')).toEqual({
      text: 'EXISTS (SELECT 1 FROM "UserEmail" e WHERE e."userId" = u."id" AND e."value" ILIKE $1 OFFSET 0)',
      values: ["%@x.org"],
    });
    // eq / sw on the address: the lower(value) index can start from the matching rows.
    expect(sql('emails[value eq "A@x.org" and type eq "work"]').text).toBe(
      'EXISTS (SELECT 1 FROM "UserEmail" e WHERE e."userId" = u."id" AND (lower(e."value") = lower($1) AND lower(e."type") = lower($2)))',
    );
    expect(sql('emails sw "a"').text).toBe('EXISTS (SELECT 1 FROM "UserEmail" e WHERE e."userId" = u."id" AND lower(e."value") LIKE lower($1))');
    expect(sql("emails pr").text).toBe('EXISTS (SELECT 1 FROM "UserEmail" e WHERE e."userId" = u."id" AND TRUE OFFSET 0)');
    expect(sql('id eq "a_b"')).toEqual({ text: 'u."id" = $1', values: ["a_b"] });
  });
});

describe("compileSort", () => {
  it("sorts by the sortable attributes, by id when none is given", () => {
    expect(compileSort(undefined, undefined)).toEqual({ asc: true });
    expect(compileSort("userName", "descending")).toEqual({ by: "username", asc: false });
    expect(compileSort("urn:ietf:params:scim:schemas:core:2.0:User:meta.lastModified", undefined)).toEqual({ by: "updatedAt", asc: true });
    for (const by of ["title", "toString", "emails[type eq 1]"]) {
      expect(() => compileSort(by, undefined)).toThrow(expect.objectContaining({ scimType: "invalidValue" }));
    }
    expect(() => compileSort("userName", "asc")).toThrow(expect.objectContaining({ scimType: "invalidValue" }));
  });

  it("orders by the column with the id as tie-breaker", () => {
    const sort = (by?: string, order?: string) => {
      const c = scimOrderSql(compileSort(by, order));
      return { orderBy: c.orderBy.text, columns: c.columns.text };
    };
    expect(sort()).toEqual({ orderBy: 'u."id" ASC', columns: 'u."id"' });
    expect(sort("id", "descending")).toEqual({ orderBy: 'u."id" DESC', columns: 'u."id"' });
    expect(sort("userName", "descending")).toEqual({ orderBy: 'u."usernameLower" DESC, u."id" DESC', columns: 'u."id", u."usernameLower"' });
    expect(sort("emails.value")).toEqual({ orderBy: 'u."email" ASC NULLS LAST, u."id" ASC', columns: 'u."id", u."email"' });
  });
});
