// The v2 list conventions on ListUsers: offset/limit paging, sort column and
// direction, typed filters combined with and/or/not, total count.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;

interface ListBody {
  details: { totalResult: string };
  result: { userId: string; username: string; state: string }[];
}

async function list(request: unknown): Promise<ListBody> {
  const res = await rest(t.url, t.pat, "POST", "/v2/users", request);
  expect(res.status).toBe(200);
  const body = (await res.json()) as ListBody;
  // proto3 JSON leaves out an empty repeated field.
  return { ...body, result: body.result ?? [] };
}

beforeAll(async () => {
  t = await startTestServer();
  orgId = ((await (await rest(t.url, t.pat, "GET", "/v2/instance")).json()) as { instance: { defaultOrganizationId: string } }).instance.defaultOrganizationId;
  const people = [
    ["Alice", "Zeta", "alice@example.com"],
    ["bob", "Young", "bob@example.org"],
    ["Carol", "Xavier", "carol@example.com"],
    ["dave_1", "Walker", "dave@example.net"],
  ];
  for (const [given, family, email] of people) {
    const res = await rest(t.url, t.pat, "POST", "/v2/users/new", {
      organizationId: orgId,
      username: given,
      human: { profile: { givenName: given, familyName: family }, email: { email } },
      metadata: [{ key: "team", value: Buffer.from(given === "bob" ? "blue" : "red").toString("base64") }],
    });
    expect(res.status).toBe(200);
  }
});
afterAll(() => t.stop());

describe("ListUsers", () => {
  it("counts everything and pages with offset and limit", async () => {
    const all = await list({});
    expect(all.details.totalResult).toBe("6");
    const page1 = await list({ query: { limit: 2, offset: 0, asc: true }, sortingColumn: "USER_FIELD_NAME_USER_NAME" });
    const page2 = await list({ query: { limit: 2, offset: 2, asc: true }, sortingColumn: "USER_FIELD_NAME_USER_NAME" });
    expect(page1.details.totalResult).toBe("6");
    expect(page1.result.map((u) => u.username)).toEqual(["admin", "Alice"]);
    expect(page2.result.map((u) => u.username)).toEqual(["bob", "Carol"]);
  });

  it("sorts case-insensitively by user name in both directions", async () => {
    const asc = await list({ query: { asc: true }, sortingColumn: "USER_FIELD_NAME_USER_NAME" });
    expect(asc.result.map((u) => u.username)).toEqual(["admin", "Alice", "bob", "Carol", "dave_1", "svc-admin"]);
    const desc = await list({ query: { asc: false }, sortingColumn: "USER_FIELD_NAME_USER_NAME" });
    expect(desc.result.map((u) => u.username)).toEqual(["svc-admin", "dave_1", "Carol", "bob", "Alice", "admin"]);
  });

  it("filters by text with each method, case-sensitive or not", async () => {
    const names = async (q: unknown) =>
      (await list({ query: { asc: true }, sortingColumn: "USER_FIELD_NAME_USER_NAME", queries: [q] })).result.map((u) => u.username);
    expect(await names({ userNameQuery: { userName: "alice", method: "TEXT_QUERY_METHOD_EQUALS" } })).toEqual([]);
    expect(await names({ userNameQuery: { userName: "alice", method: "TEXT_QUERY_METHOD_EQUALS_IGNORE_CASE" } })).toEqual(["Alice"]);
    expect(await names({ userNameQuery: { userName: "CA", method: "TEXT_QUERY_METHOD_STARTS_WITH_IGNORE_CASE" } })).toEqual(["Carol"]);
    expect(await names({ emailQuery: { emailAddress: "example.com", method: "TEXT_QUERY_METHOD_ENDS_WITH" } })).toEqual(["Alice", "Carol"]);
    expect(await names({ lastNameQuery: { lastName: "a", method: "TEXT_QUERY_METHOD_CONTAINS" } })).toEqual(["admin", "Alice", "Carol", "dave_1"]);
    // LIKE wildcards in a value are matched literally.
    expect(await names({ userNameQuery: { userName: "_", method: "TEXT_QUERY_METHOD_CONTAINS" } })).toEqual(["dave_1"]);
    expect(await names({ userNameQuery: { userName: "%", method: "TEXT_QUERY_METHOD_CONTAINS" } })).toEqual([]);
  });

  it("filters by type, state, metadata and login name", async () => {
    const names = async (q: unknown) =>
      (await list({ query: { asc: true }, sortingColumn: "USER_FIELD_NAME_USER_NAME", queries: [q] })).result.map((u) => u.username);
    expect(await names({ typeQuery: { type: "USER_TYPE_MACHINE" } })).toEqual(["svc-admin"]);
    // Humans created without a password wait in the initial state.
    expect(await names({ stateQuery: { state: "USER_STATE_INITIAL" } })).toEqual(["Alice", "bob", "Carol", "dave_1"]);
    expect(await names({ metadataValueQuery: { value: Buffer.from("blue").toString("base64") } })).toEqual(["bob"]);
    expect(await names({ metadataKeyQuery: { key: "team" } })).toHaveLength(4);
    expect(await names({ loginNameQuery: { loginName: "carol@default.localhost", method: "TEXT_QUERY_METHOD_EQUALS_IGNORE_CASE" } })).toEqual(["Carol"]);
    expect(await names({ organizationIdQuery: { organizationId: orgId } })).toHaveLength(6);
  });

  it("combines filters with and, or and not", async () => {
    const res = await list({
      query: { asc: true },
      sortingColumn: "USER_FIELD_NAME_USER_NAME",
      queries: [
        { typeQuery: { type: "USER_TYPE_HUMAN" } },
        {
          notQuery: {
            query: {
              orQuery: {
                queries: [
                  { userNameQuery: { userName: "admin", method: "TEXT_QUERY_METHOD_EQUALS" } },
                  { firstNameQuery: { firstName: "bob", method: "TEXT_QUERY_METHOD_EQUALS" } },
                ],
              },
            },
          },
        },
      ],
    });
    expect(res.result.map((u) => u.username)).toEqual(["Alice", "Carol", "dave_1"]);
    expect(res.details.totalResult).toBe("3");
  });

  it("keeps the total past the last page, puts users without the sorted value last, and pages stably", async () => {
    const past = await list({ query: { offset: 100, limit: 10 } });
    expect(past.details.totalResult).toBe("6");
    expect(past.result).toEqual([]);
    // svc-admin (a machine) has no email: last in both directions.
    for (const asc of [true, false]) {
      const byEmail = (await list({ query: { asc }, sortingColumn: "USER_FIELD_NAME_EMAIL" })).result.map((u) => u.username);
      expect(byEmail.at(-1)).toBe("svc-admin");
      expect(byEmail).toHaveLength(6);
    }
    // The default order (newest first), one user a page, visits everyone once.
    const seen: string[] = [];
    for (let offset = 0; offset < 6; offset++) seen.push(...(await list({ query: { offset, limit: 1 } })).result.map((u) => u.username));
    expect(seen).toEqual((await list({})).result.map((u) => u.username));
    expect(new Set(seen).size).toBe(6);
  });

  it("treats not over a missing value as not matching, and filters by ids", async () => {
    const names = async (q: unknown) =>
      (await list({ query: { asc: true }, sortingColumn: "USER_FIELD_NAME_USER_NAME", queries: [q] })).result.map((u) => u.username);
    // svc-admin has no email: neither "ends with .com" nor its negation matches it.
    const notDotCom = await names({ notQuery: { query: { emailQuery: { emailAddress: ".com", method: "TEXT_QUERY_METHOD_ENDS_WITH" } } } });
    expect(notDotCom).toEqual(expect.arrayContaining(["bob", "dave_1"]));
    for (const excluded of ["svc-admin", "Alice", "Carol"]) expect(notDotCom).not.toContain(excluded);
    const all = (await list({ query: { asc: true }, sortingColumn: "USER_FIELD_NAME_USER_NAME" })).result;
    const two = [all[1]?.userId, all[3]?.userId];
    expect(await names({ inUserIdsQuery: { userIds: two } })).toEqual([all[1]?.username, all[3]?.username]);
  });

  it("rejects an empty filter and a limit over 1000", async () => {
    expect((await rest(t.url, t.pat, "POST", "/v2/users", { queries: [{}] })).status).toBe(400);
    expect((await rest(t.url, t.pat, "POST", "/v2/users", { query: { limit: 1000 } })).status).toBe(200);
    expect((await rest(t.url, t.pat, "POST", "/v2/users", { query: { limit: 1001 } })).status).toBe(400);
  });
});

describe("text filters on other lists", () => {
  it("treat LIKE wildcards literally in case-insensitive equality (ListOrganizations)", async () => {
    const names = async (name: string) => {
      const res = await rest(t.url, t.pat, "POST", "/v2/organizations", { queries: [{ nameQuery: { name, method: "TEXT_QUERY_METHOD_EQUALS_IGNORE_CASE" } }] });
      expect(res.status).toBe(200);
      return (((await res.json()) as { result?: { name: string }[] }).result ?? []).map((o) => o.name);
    };
    expect(await names("DEFAULT")).toEqual(["Default"]);
    expect(await names("_efault")).toEqual([]);
    expect(await names("%")).toEqual([]);
  });
});
