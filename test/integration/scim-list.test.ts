// SCIM queries through the real server: every filter operator per attribute
// of the spec's table, the grammar (and/or/not, nested parentheses, value
// paths, pr, literals), invalid filters, sorting, paging (startIndex, count
// clamp, count=0) and POST /Users/.search.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import SCIMMY from "scimmy";
import { type Body, expectError, LIST_URN, newUser, SEARCH_URN, scim } from "../fixtures/scim/client.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { caller, createOrg } from "../support/users.js";

let t: TestServer;
let base: string;
let pat: string;
const ids: Record<string, string> = {};

const PEOPLE = [
  { userName: "alice", given: "Alice", family: "Adams", email: "alice@work.example", home: "alice@home.example", active: true },
  { userName: "bob", given: "Bob", family: "Brown", email: "bob@work.example", home: undefined, active: false },
  { userName: "carol", given: "Carol", family: "J_nsen", email: "carol@work.example", home: "carol@home.example", active: true },
  { userName: "Dave", given: "Dave", family: "Jensen", email: "dave%x@work.example", home: undefined, active: true },
  { userName: "eve", given: null, family: null, email: undefined, home: undefined, active: true },
];

beforeAll(async () => {
  t = await startTestServer();
  // An organization of its own: the default one holds the bootstrap administrator.
  const orgId = await createOrg(t, "Listing");
  base = `/scim/v2/${orgId}`;
  pat = (await caller(t, orgId, "lister", ["ORG_USER_MANAGER"])).pat;
  for (const p of PEOPLE) {
    const emails = [
      ...(p.email ? [{ value: p.email, type: "work", primary: true }] : []),
      ...(p.home ? [{ value: p.home, type: "home", primary: false }] : []),
    ];
    const body = newUser(p.userName, {
      name: p.given ? { givenName: p.given, familyName: p.family } : undefined,
      emails,
      active: p.active,
      externalId: `ext-${p.userName}`,
    });
    const r = await scim(t, pat, "POST", `${base}/Users`, body);
    expect(r.status).toBe(201);
    ids[p.userName] = r.body.id;
    // Distinct creation times for the meta.created filters and sorts.
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
});
afterAll(() => t.stop());

async function names(filter: string, extra = ""): Promise<string[]> {
  const r = await scim(t, pat, "GET", `${base}/Users?filter=${encodeURIComponent(filter)}${extra}`);
  expect([filter, r.status]).toEqual([filter, 200]);
  return r.body.Resources.map((u: Body) => u.userName).sort();
}

describe("filters", () => {
  it("userName: eq (case-insensitive), ne, co, sw, ew", async () => {
    expect(await names('userName eq "ALICE"')).toEqual(["alice"]);
    expect(await names('userName ne "alice"')).toEqual(["Dave", "bob", "carol", "eve"]);
    expect(await names('userName co "a"')).toEqual(["Dave", "alice", "carol"]);
    expect(await names('userName sw "d"')).toEqual(["Dave"]);
    expect(await names('userName ew "E"')).toEqual(["Dave", "alice", "eve"]);
  });

  it("name.givenName and name.familyName: eq, ne, co, sw, ew; LIKE wildcards are literal", async () => {
    expect(await names('name.givenName eq "bob"')).toEqual(["bob"]);
    expect(await names('name.familyName co "_"')).toEqual(["carol"]);
    expect(await names('name.familyName eq "J_nsen"')).toEqual(["carol"]);
    expect(await names('name.familyName ne "J_nsen"')).toEqual(["Dave", "alice", "bob"]);
    expect(await names('name.familyName sw "J"')).toEqual(["Dave", "carol"]);
    expect(await names('name.familyName ew "EN"')).toEqual(["Dave", "carol"]);
    expect(await names('name.givenName ne "Alice"')).toEqual(["Dave", "bob", "carol"]);
  });

  it("emails and emails.value: eq, ne, co, sw, ew over every address", async () => {
    expect(await names('emails eq "alice@home.example"')).toEqual(["alice"]);
    expect(await names('emails.value co "%"')).toEqual(["Dave"]);
    expect(await names('emails.value sw "CAROL@"')).toEqual(["carol"]);
    expect(await names('emails.value ew "@home.example"')).toEqual(["alice", "carol"]);
    expect(await names('emails ne "bob@work.example"')).toEqual(["Dave", "alice", "carol"]);
  });

  it("id: eq, ne, co, sw, ew; externalId: eq, ne", async () => {
    expect(await names(`id eq "${ids.bob}"`)).toEqual(["bob"]);
    expect(await names(`id sw "${ids.bob}"`)).toEqual(["bob"]);
    expect(await names(`id co "${ids.bob?.slice(3, 12)}"`)).toContain("bob");
    expect(await names(`id ew "${ids.bob?.slice(-8)}"`)).toEqual(["bob"]);
    expect(await names(`id ne "${ids.bob}"`)).toHaveLength(4);
    expect(await names('externalId eq "ext-carol"')).toEqual(["carol"]);
    expect(await names('externalId ne "ext-carol"')).toEqual(["Dave", "alice", "bob", "eve"]);
  });

  it("active: eq, ne with booleans", async () => {
    expect(await names("active eq false")).toEqual(["bob"]);
    expect(await names("active ne false")).toEqual(["Dave", "alice", "carol", "eve"]);
  });

  it("meta.created and meta.lastModified: eq, gt, ge, lt, le with timestamps", async () => {
    const carol = (await scim(t, pat, "GET", `${base}/Users/${ids.carol}`)).body;
    expect(await names(`meta.created eq "${carol.meta.created}"`)).toEqual(["carol"]);
    expect(await names(`meta.created gt "${carol.meta.created}"`)).toEqual(["Dave", "eve"]);
    expect(await names(`meta.created ge "${carol.meta.created}"`)).toEqual(["Dave", "carol", "eve"]);
    expect(await names(`meta.created lt "${carol.meta.created}"`)).toEqual(["alice", "bob"]);
    expect(await names(`meta.lastModified le "${carol.meta.lastModified}"`)).toEqual(["alice", "bob", "carol"]);
  });

  it("and, or, not, nested parentheses, value paths, pr", async () => {
    expect(await names('userName sw "a" or userName sw "b"')).toEqual(["alice", "bob"]);
    expect(await names('emails[type eq "home"] and active eq true')).toEqual(["alice", "carol"]);
    expect(await names('not (active eq true) or (name.givenName eq "Dave" and (userName eq "dave" or userName eq "x"))')).toEqual(["Dave", "bob"]);
    expect(await names('emails[type eq "work" and value co "carol"]')).toEqual(["carol"]);
    expect(await names('emails[primary eq true and not (value sw "a")]')).toEqual(["Dave", "bob", "carol"]);
    expect(await names("name.givenName pr")).toEqual(["Dave", "alice", "bob", "carol"]);
    expect(await names("emails pr and externalId pr")).toEqual(["Dave", "alice", "bob", "carol"]);
    expect(await names('urn:ietf:params:scim:schemas:core:2.0:User:userName eq "eve"')).toEqual(["eve"]);
  });

  it("invalid filters are 400 invalidFilter", async () => {
    const bad = [
      'userName gt "a"', // operator not allowed on the attribute
      'externalId co "x"',
      'active co "x"',
      'meta.created co "2020"',
      'meta.created gt "yesterday"',
      'displayName eq "x"', // unknown / not filterable
      'phoneNumbers eq "1"',
      'emails[display eq "x"]',
      'userName eq "unterminated',
      "userName eq",
      '(userName eq "a"',
      'userName eq "a" and',
      'userName xx "a"',
      "active eq 1",
      'userName eq "a" )',
      `userName eq "${"x".repeat(1000)}"`,
      // An instant before year 0001, which svc does not store.
      'meta.created gt "0000-06-01T00:00:00Z"',
    ];
    for (const f of bad) {
      const r = await scim(t, pat, "GET", `${base}/Users?filter=${encodeURIComponent(f)}`);
      expect([f.slice(0, 40), r.status, r.body.scimType]).toEqual([f.slice(0, 40), 400, "invalidFilter"]);
    }
  });
});

describe("sorting and paging", () => {
  it("default order is by id; sortBy and sortOrder over the sortable attributes", async () => {
    const all = await scim(t, pat, "GET", `${base}/Users?filter=${encodeURIComponent("userName pr")}`);
    const byId = [...all.body.Resources].map((u: Body) => u.id);
    expect(byId).toEqual([...byId].sort());
    const sorted = async (q: string) =>
      (await scim(t, pat, "GET", `${base}/Users?filter=${encodeURIComponent('userName ne "lister"')}&${q}`)).body.Resources.map((u: Body) => u.userName);
    expect(await sorted("sortBy=userName")).toEqual(["alice", "bob", "carol", "Dave", "eve"]);
    expect(await sorted("sortBy=userName&sortOrder=descending")).toEqual(["eve", "Dave", "carol", "bob", "alice"]);
    expect(await sorted("sortBy=name.familyName")).toEqual(["alice", "bob", "carol", "Dave", "eve"]);
    expect(await sorted("sortBy=meta.created&sortOrder=descending")).toEqual(["eve", "Dave", "carol", "bob", "alice"]);
    expect(await sorted("sortBy=emails.value")).toEqual(["alice", "bob", "carol", "Dave", "eve"]);
    expect((await sorted("sortBy=name.givenName&sortOrder=ascending"))[0]).toBe("alice");
    expect(await sorted("sortBy=meta.lastModified")).toHaveLength(5);
    expect(await sorted("sortBy=id")).toHaveLength(5);
  });

  it("unknown sortBy or sortOrder: 400 invalidValue", async () => {
    expectError(await scim(t, pat, "GET", `${base}/Users?sortBy=displayName`), 400, "invalidValue");
    expectError(await scim(t, pat, "GET", `${base}/Users?sortBy=userName&sortOrder=up`), 400, "invalidValue");
    expectError(await scim(t, pat, "GET", `${base}/Users?count=ten`), 400, "invalidValue");
    expectError(await scim(t, pat, "GET", `${base}/Users?startIndex=1.5`), 400, "invalidValue");
    expectError(await scim(t, pat, "GET", `${base}/Users?startIndex=99999999999`), 400, "invalidValue");
  });

  it("startIndex is 1-based (below 1 is 1); count defaults to 100, is clamped to 100, 0 gives only totalResults", async () => {
    const q = `filter=${encodeURIComponent('userName ne "lister"')}&sortBy=userName`;
    const page = await scim(t, pat, "GET", `${base}/Users?${q}&startIndex=2&count=2`);
    expect(page.body).toMatchObject({ schemas: [LIST_URN], totalResults: 5, startIndex: 2, itemsPerPage: 2 });
    expect(page.body.Resources.map((u: Body) => u.userName)).toEqual(["bob", "carol"]);
    const zero = await scim(t, pat, "GET", `${base}/Users?${q}&startIndex=0&count=1`);
    expect(zero.body).toMatchObject({ startIndex: 1, itemsPerPage: 1 });
    const none = await scim(t, pat, "GET", `${base}/Users?${q}&count=0`);
    expect(none.body).toEqual({ schemas: [LIST_URN], totalResults: 5, startIndex: 1, itemsPerPage: 0, Resources: [] });
    const many = await scim(t, pat, "GET", `${base}/Users?${q}&count=1000`);
    expect(many.body).toMatchObject({ totalResults: 5, itemsPerPage: 5 });
    const past = await scim(t, pat, "GET", `${base}/Users?${q}&startIndex=50`);
    expect(past.body).toMatchObject({ totalResults: 5, startIndex: 50, itemsPerPage: 0, Resources: [] });
    const empty = await scim(t, pat, "GET", `${base}/Users?filter=${encodeURIComponent('userName eq "nobody-here"')}`);
    expect(empty.body).toEqual({ schemas: [LIST_URN], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });
  });

  it("attributes and excludedAttributes", async () => {
    const r = await scim(t, pat, "GET", `${base}/Users/${ids.alice}?attributes=userName,name.givenName`);
    expect(r.body).toEqual({ schemas: expect.any(Array), id: ids.alice, userName: "alice", name: { givenName: "Alice" }, meta: expect.any(Object) });
    const x = await scim(t, pat, "GET", `${base}/Users?filter=${encodeURIComponent('userName eq "alice"')}&excludedAttributes=emails,name`);
    expect(x.body.Resources[0].emails).toBeUndefined();
    expect(x.body.Resources[0].name).toBeUndefined();
    expect(x.body.Resources[0].userName).toBe("alice");
  });
});

describe("POST /Users/.search", () => {
  it("takes a SearchRequest and answers a ListResponse", async () => {
    const r = await scim(t, pat, "POST", `${base}/Users/.search`, {
      schemas: [SEARCH_URN],
      filter: 'emails[type eq "home"]',
      sortBy: "userName",
      sortOrder: "descending",
      startIndex: 1,
      count: 10,
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ schemas: [LIST_URN], totalResults: 2, itemsPerPage: 2 });
    expect(r.body.Resources.map((u: Body) => u.userName)).toEqual(["carol", "alice"]);
    for (const u of r.body.Resources) expect(() => new SCIMMY.Schemas.User(u, "out")).not.toThrow();
    expect(() => new SCIMMY.Messages.ListResponse(r.body)).not.toThrow();
  });

  it("without the SearchRequest schema: 400 invalidSyntax; a bad filter: 400 invalidFilter", async () => {
    expectError(await scim(t, pat, "POST", `${base}/Users/.search`, { filter: "userName pr" }), 400, "invalidSyntax");
    expectError(await scim(t, pat, "POST", `${base}/Users/.search`, { schemas: [SEARCH_URN], filter: "userName zz" }), 400, "invalidFilter");
  });
});
