// SCIM PATCH through the real server: add/replace/remove with and without
// path, case-insensitive op names, simple, complex and multi-valued
// attributes, sub-attributes, filtered paths, Entra ID's dotted keys and
// "True"/"False" strings, primary demotion, password changes, the 200/204
// answer and every error the issue lists.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import SCIMMY from "scimmy";
import { verifyPassword } from "../../src/crypto/passwords.js";
import { type Body, expectError, newUser, patch, scim } from "../fixtures/scim/client.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { caller, defaultOrgId, json } from "../support/users.js";

let t: TestServer;
let base: string;
let pat: string;
let n = 0;

beforeAll(async () => {
  t = await startTestServer();
  const orgId = await defaultOrgId(t);
  base = `/scim/v2/${orgId}`;
  pat = (await caller(t, orgId, "patcher", ["ORG_USER_MANAGER"])).pat;
});
afterAll(() => t.stop());

async function make(extra: Record<string, unknown> = {}): Promise<Body> {
  const r = await scim(t, pat, "POST", `${base}/Users`, newUser(`patch-${++n}`, extra));
  expect(r.status).toBe(201);
  return r.body;
}

async function apply(id: string, ...ops: Record<string, unknown>[]): Promise<Body> {
  const r = await scim(t, pat, "PATCH", `${base}/Users/${id}`, patch(...ops));
  expect([r.status, r.body?.detail]).toEqual([200, undefined]);
  expect(() => new SCIMMY.Schemas.User(r.body, "out")).not.toThrow();
  return r.body;
}

describe("PATCH operations", () => {
  it("replace/add/remove on simple attributes; op names case-insensitive", async () => {
    const u = await make();
    let r = await apply(u.id, { op: "Replace", path: "title", value: "Boss" }, { op: "ADD", path: "nickName", value: "Bossy" });
    expect(r).toMatchObject({ title: "Boss", nickName: "Bossy" });
    r = await apply(u.id, { op: "remove", path: "title" });
    expect(r.title).toBeUndefined();
    expect(r.nickName).toBe("Bossy");
    const g = await scim(t, pat, "GET", `${base}/Users/${u.id}`);
    expect(g.body).toEqual(r);
  });

  it("sub-attributes and complex values: name.givenName, name as an object", async () => {
    const u = await make();
    let r = await apply(u.id, { op: "replace", path: "name.givenName", value: "Gina" });
    expect(r.name).toEqual({ givenName: "Gina", familyName: "Family" });
    r = await apply(u.id, { op: "replace", path: "name", value: { middleName: "M" } });
    expect(r.name).toEqual({ givenName: "Gina", familyName: "Family", middleName: "M" });
    r = await apply(u.id, { op: "remove", path: "name.middleName" });
    expect(r.name).toEqual({ givenName: "Gina", familyName: "Family" });
    r = await apply(u.id, { op: "remove", path: "name" });
    expect(r.name).toBeUndefined();
  });

  it('path-less add/replace with an object, including Entra\'s dotted keys and "False"', async () => {
    const u = await make();
    const r = await apply(u.id, {
      op: "Replace",
      value: {
        "name.givenName": "Dotted",
        "name.familyName": "Keys",
        displayName: "DK",
        active: "False",
        "urn:ietf:params:scim:schemas:core:2.0:User:title": "T",
      },
    });
    expect(r).toMatchObject({ name: { givenName: "Dotted", familyName: "Keys" }, displayName: "DK", active: false, title: "T" });
    const back = await apply(u.id, { op: "replace", path: "active", value: "True" });
    expect(back.active).toBe(true);
  });

  it("multi-valued: add appends, replace swaps the list, remove clears it", async () => {
    const u = await make();
    let r = await apply(u.id, { op: "add", path: "phoneNumbers", value: [{ value: "+1 555 0100", type: "work" }] });
    expect(r.phoneNumbers).toEqual([{ value: "+1 555 0100", type: "work", primary: false }]);
    r = await apply(u.id, { op: "add", path: "phoneNumbers", value: { value: "+1 555 0200", type: "mobile", primary: true } });
    expect(r.phoneNumbers).toHaveLength(2);
    r = await apply(u.id, { op: "replace", path: "phoneNumbers", value: [{ value: "+1 555 0300", type: "home" }] });
    expect(r.phoneNumbers).toEqual([{ value: "+1 555 0300", type: "home", primary: false }]);
    r = await apply(u.id, { op: "remove", path: "phoneNumbers" });
    expect(r.phoneNumbers).toBeUndefined();
  });

  it('filtered paths: emails[primary eq true].value, emails[type eq "work"].value, addresses[type eq "home"]', async () => {
    const u = await make({
      emails: [
        { value: "w@example.com", type: "work", primary: true },
        { value: "h@example.com", type: "home" },
      ],
      addresses: [{ type: "home", locality: "Old Town" }],
    });
    let r = await apply(u.id, { op: "replace", path: "emails[primary eq true].value", value: "new-primary@example.com" });
    expect(r.emails[0]).toEqual({ value: "new-primary@example.com", type: "work", primary: true });
    r = await apply(u.id, { op: "replace", path: 'emails[type eq "home"].value', value: "h2@example.com" });
    expect(r.emails[1].value).toBe("h2@example.com");
    r = await apply(u.id, { op: "replace", path: 'addresses[type eq "home"]', value: { type: "home", locality: "New Town", formatted: "1 Road\nNew Town" } });
    expect(r.addresses).toEqual([{ type: "home", locality: "New Town", formatted: "1 Road\nNew Town", primary: false }]);
    r = await apply(u.id, { op: "replace", path: 'addresses[type eq "home"].postalCode', value: "12345" });
    expect(r.addresses[0].postalCode).toBe("12345");
    r = await apply(u.id, { op: "remove", path: 'emails[type eq "home"]' });
    expect(r.emails).toEqual([{ value: "new-primary@example.com", type: "work", primary: true }]);
    // The v2 API's email follows the primary entry.
    const v2 = (await json<{ user: Body }>(await rest(t.url, t.pat, "GET", `/v2/users/${u.id}`))).user;
    expect(v2.human.email.email).toBe("new-primary@example.com");
  });

  it("add through a filter that matches nothing creates that entry (as Entra ID sends a new work email)", async () => {
    const u = await make({ emails: [] });
    const r = await apply(u.id, { op: "Add", path: 'emails[type eq "work"].value', value: "entra@example.com" });
    expect(r.emails).toEqual([{ value: "entra@example.com", type: "work", primary: false }]);
  });

  it("setting a new primary demotes the old one", async () => {
    const u = await make();
    let r = await apply(u.id, { op: "add", path: "emails", value: [{ value: "second@example.com", type: "home", primary: true }] });
    expect(r.emails.map((e: Body) => [e.value, e.primary])).toEqual([
      [u.emails[0].value, false],
      ["second@example.com", true],
    ]);
    r = await apply(u.id, { op: "replace", path: `emails[value eq "${u.emails[0].value}"].primary`, value: true });
    expect(r.emails.map((e: Body) => e.primary)).toEqual([true, false]);
    const v2 = (await json<{ user: Body }>(await rest(t.url, t.pat, "GET", `/v2/users/${u.id}`))).user;
    expect(v2.human.email.email).toBe(u.emails[0].value);
  });

  it("password: replace sets a new argon2id hash, never returned", async () => {
    const u = await make();
    const r = await apply(u.id, { op: "replace", path: "password", value: "N3w-Scim-Passw0rd!" });
    expect(r.password).toBeUndefined();
    const row = await t.server.db.prisma.user.findUniqueOrThrow({ where: { id: u.id }, select: { passwordHash: true, state: true } });
    expect(row.passwordHash).toMatch(/^\$argon2id\$/);
    expect((await verifyPassword(row.passwordHash as string, "N3w-Scim-Passw0rd!")).ok).toBe(true);
    expect(row.state).toBe("ACTIVE");
    expectError(await scim(t, pat, "PATCH", `${base}/Users/${u.id}`, patch({ op: "replace", path: "password", value: "weak" })), 400, "invalidValue");
  });

  it("200 with the user by default; 204 with Prefer: return=minimal; 200 again when attributes is asked for", async () => {
    const u = await make();
    const min = await scim(t, pat, "PATCH", `${base}/Users/${u.id}`, patch({ op: "replace", path: "title", value: "A" }), { prefer: "return=minimal" });
    expect(min.status).toBe(204);
    expect(min.body).toBeUndefined();
    const attrs = await scim(t, pat, "PATCH", `${base}/Users/${u.id}?attributes=title`, patch({ op: "replace", path: "title", value: "B" }), {
      prefer: "return=minimal",
    });
    expect(attrs.status).toBe(200);
    expect(attrs.body).toEqual({ schemas: expect.any(Array), id: u.id, title: "B", meta: expect.any(Object) });
  });
});

describe("PATCH errors", () => {
  let id: string;
  beforeAll(async () => {
    id = (await make()).id;
  });
  const fails = async (body: unknown, status: number, scimType: string) =>
    expectError(await scim(t, pat, "PATCH", `${base}/Users/${id}`, body), status, scimType);

  it("unknown op: 400 invalidValue", () => fails(patch({ op: "merge", path: "title", value: "x" }), 400, "invalidValue"));
  it("unparsable or unknown path: 400 invalidPath", async () => {
    await fails(patch({ op: "replace", path: "emails[type eq", value: "x" }), 400, "invalidPath");
    await fails(patch({ op: "replace", path: "noSuchAttribute", value: "x" }), 400, "invalidPath");
    await fails(patch({ op: "replace", path: "name.nope", value: "x" }), 400, "invalidPath");
    await fails(patch({ op: "replace", path: 'title[value eq "x"]', value: "x" }), 400, "invalidPath");
  });
  it("remove without path: 400 noTarget", () => fails(patch({ op: "remove" }), 400, "noTarget"));
  it("replace through a filter matching nothing: 400 noTarget", () =>
    fails(patch({ op: "replace", path: 'emails[type eq "pager"].value', value: "x@example.com" }), 400, "noTarget"));
  it("wrong value type: 400 invalidValue", async () => {
    await fails(patch({ op: "replace", path: "active", value: "maybe" }), 400, "invalidValue");
    await fails(patch({ op: "replace", path: "title", value: 42 }), 400, "invalidValue");
    await fails(patch({ op: "replace", path: "emails", value: "not-an-object" }), 400, "invalidValue");
    await fails(patch({ op: "replace", value: "not-an-object" }), 400, "invalidValue");
    await fails(patch({ op: "remove", path: "userName" }), 400, "invalidValue");
  });
  it("immutable attributes (id, meta): 400 mutability", async () => {
    await fails(patch({ op: "replace", path: "id", value: "other" }), 400, "mutability");
    await fails(patch({ op: "replace", path: "meta.created", value: "2020-01-01T00:00:00Z" }), 400, "mutability");
    await fails(patch({ op: "replace", value: { id: "other" } }), 400, "mutability");
  });
  it("a body without the PatchOp schema or Operations: 400 invalidSyntax; unknown user: 404", async () => {
    await fails({ Operations: [{ op: "replace", path: "title", value: "x" }] }, 400, "invalidSyntax");
    await fails(patch(), 400, "invalidSyntax");
    expectError(await scim(t, pat, "PATCH", `${base}/Users/nope`, patch({ op: "replace", path: "title", value: "x" })), 404, "noTarget");
  });
  it("a failed PATCH changes nothing", async () => {
    const before = (await scim(t, pat, "GET", `${base}/Users/${id}`)).body;
    await fails(patch({ op: "replace", path: "title", value: "changed" }, { op: "replace", path: "id", value: "x" }), 400, "mutability");
    expect((await scim(t, pat, "GET", `${base}/Users/${id}`)).body).toEqual(before);
  });
});
