// The SCIM filter parser and compiler without a database: the grammar's
// shapes, precedence, literals and the SQL condition each filter becomes.
import { describe, expect, it } from "@jest/globals";
import { compileFilter, compileSort, parseFilter } from "../../src/http/scim/filter.js";

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
  // The SQL text and its parameters: values always travel as parameters, never inside the text.
  const sql = (f: string) => {
    const q = compileFilter(parseFilter(f), scope);
    return { text: q.text.replace(/\s+/g, " ").trim(), values: q.values };
  };
  it("compiles value paths into one EXISTS over the rows and escapes LIKE wildcards", () => {
    expect(sql('emails[type eq "work" and value co "a_b"]')).toEqual({
      text: 'EXISTS (SELECT 1 FROM "UserEmail" e WHERE e."userId" = u."id" AND (lower(e."type") = lower($1) AND e."value" ILIKE $2) OFFSET 0)',
      values: ["work", "%a\\_b%"],
    });
    expect(sql('userName sw "A%"')).toEqual({ text: 'lower(u."usernameLower") LIKE $1', values: ["a\\%%"] });
    expect(sql('externalId eq "x"')).toEqual({
      text: 'EXISTS (SELECT 1 FROM "ScimExternalId" x WHERE x."userId" = u."id" AND x."provisionerId" = $1 AND x."externalId" = $2)',
      values: ["p1", "x"],
    });
    expect(sql('externalId ne "x"').text).toMatch(/^NOT EXISTS/);
    expect(sql('meta.created ge "2026-01-01T00:00:00Z"')).toEqual({ text: 'u."createdAt" >= $1::timestamptz', values: [new Date("2026-01-01T00:00:00Z")] });
    expect(sql('not (name.familyName ne "O\'Brien") or active eq false')).toEqual({
      text: '(NOT (NOT (lower(u."familyName") = lower($1))) OR u."state" = \'INACTIVE\')',
      values: ["O'Brien"],
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
    expect(sql('id eq "a_b"')).toEqual({ text: 'u."id" = $1', values: ["a_b"] });
  });

  it("refuses operators outside the spec's table", () => {
    for (const f of ['userName gt "a"', 'externalId sw "a"', "active gt true", 'meta.created sw "2026"', 'displayName eq "a"', 'emails[display eq "a"]']) {
      expect(() => compileFilter(parseFilter(f), scope)).toThrow(expect.objectContaining({ scimType: "invalidFilter" }));
    }
  });
});

describe("compileSort", () => {
  it("sorts by the sortable attributes with the id as tie-breaker", () => {
    const sort = (by?: string, order?: string) => {
      const c = compileSort(by, order);
      return { orderBy: c.orderBy.text, columns: c.columns.text };
    };
    expect(sort()).toEqual({ orderBy: 'u."id" ASC', columns: 'u."id"' });
    expect(sort("userName", "descending")).toEqual({ orderBy: 'u."usernameLower" DESC, u."id" DESC', columns: 'u."id", u."usernameLower"' });
    expect(sort("emails.value")).toEqual({ orderBy: 'u."email" ASC NULLS LAST, u."id" ASC', columns: 'u."id", u."email"' });
    expect(() => compileSort("title", undefined)).toThrow(expect.objectContaining({ scimType: "invalidValue" }));
    expect(() => compileSort("userName", "asc")).toThrow(expect.objectContaining({ scimType: "invalidValue" }));
  });
});
