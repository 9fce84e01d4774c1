// The SCIM filter parser and compiler without a database: the grammar's
// shapes, precedence, literals and the Prisma where each filter becomes.
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
  it("compiles value paths into one relation condition and escapes LIKE wildcards", () => {
    expect(compileFilter(parseFilter('emails[type eq "work" and value co "a_b"]'), scope)).toEqual({
      emails: { some: { AND: [{ type: { equals: "work", mode: "insensitive" } }, { value: { contains: "a\\_b", mode: "insensitive" } }] } },
    });
    expect(compileFilter(parseFilter('userName sw "A%"'), scope)).toEqual({ usernameLower: { startsWith: "a\\%" } });
    expect(compileFilter(parseFilter('externalId eq "x"'), scope)).toEqual({ externalIds: { some: { provisionerId: "p1", externalId: "x" } } });
    expect(compileFilter(parseFilter('meta.created ge "2026-01-01T00:00:00Z"'), scope)).toEqual({ createdAt: { gte: new Date("2026-01-01T00:00:00Z") } });
  });

  it("refuses operators outside the spec's table", () => {
    for (const f of ['userName gt "a"', 'externalId sw "a"', "active gt true", 'meta.created sw "2026"', 'displayName eq "a"', 'emails[display eq "a"]']) {
      expect(() => compileFilter(parseFilter(f), scope)).toThrow(expect.objectContaining({ scimType: "invalidFilter" }));
    }
  });
});

describe("compileSort", () => {
  it("sorts by the sortable attributes with the id as tie-breaker", () => {
    expect(compileSort(undefined, undefined)).toEqual([{ id: "asc" }]);
    expect(compileSort("userName", "descending")).toEqual([{ usernameLower: "desc" }, { id: "desc" }]);
    expect(compileSort("emails.value", undefined)).toEqual([{ email: { sort: "asc", nulls: "last" } }, { id: "asc" }]);
    expect(() => compileSort("title", undefined)).toThrow(expect.objectContaining({ scimType: "invalidValue" }));
    expect(() => compileSort("userName", "asc")).toThrow(expect.objectContaining({ scimType: "invalidValue" }));
  });
});
