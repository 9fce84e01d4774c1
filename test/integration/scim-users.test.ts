// SCIM 2.0 at /scim/v2/{orgId} through the real server: discovery, the User
// resource round trip, create/get/replace/delete, authentication and
// permissions, tenancy, errors, content negotiation and the v2 API's view of
// SCIM users (primary email and phone in sync both ways).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import SCIMMY from "scimmy";
import { type Body, DETAIL_URN, expectError, LIST_URN, newUser, patch, scim, USER_URN } from "../fixtures/scim/client.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { caller, createHuman, createMachine, createOrg, defaultOrgId, json } from "../support/users.js";

let t: TestServer;
let orgId: string;
let otherOrgId: string;
let base: string;
let manager: { userId: string; pat: string };
let auditor: { userId: string; pat: string };
let foreign: { userId: string; pat: string };

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  otherOrgId = await createOrg(t, "Other");
  base = `/scim/v2/${orgId}`;
  manager = await caller(t, orgId, "scim-manager", ["ORG_USER_MANAGER"]);
  auditor = await caller(t, orgId, "scim-auditor", ["ORG_AUDITOR"]);
  foreign = await caller(t, otherOrgId, "scim-foreign", ["ORG_USER_MANAGER"]);
});
afterAll(() => t.stop());

const FULL = {
  schemas: [USER_URN],
  userName: "Barbara.Jensen@example.com",
  externalId: "ext-bjensen",
  name: {
    formatted: "Ms. Barbara J Jensen, III",
    familyName: "Jensen",
    givenName: "Barbara",
    middleName: "Jane",
    honorificPrefix: "Ms.",
    honorificSuffix: "III",
  },
  displayName: "Babs Jensen",
  nickName: "Babs",
  profileUrl: "https://login.example.com/bjensen",
  emails: [
    { value: "bjensen@example.com", type: "work", primary: true },
    { value: "babs@jensen.org", type: "home" },
  ],
  phoneNumbers: [
    { value: "+1 555 555 5555", type: "work", primary: true },
    { value: "+1 555 555 4444", type: "mobile" },
  ],
  addresses: [
    {
      type: "work",
      streetAddress: "100 Universal City Plaza",
      locality: "Hollywood",
      region: "CA",
      postalCode: "91608",
      country: "US",
      formatted: "100 Universal City Plaza\nHollywood, CA 91608 USA",
      primary: true,
    },
  ],
  userType: "Employee",
  title: "Tour Guide",
  preferredLanguage: "en-US",
  locale: "en-US",
  timezone: "America/Los_Angeles",
  active: true,
  password: "Scim-Passw0rd!",
};

describe("discovery", () => {
  it("ServiceProviderConfig without a token, values as the spec lists", async () => {
    const r = await scim(t, undefined, "GET", `${base}/ServiceProviderConfig`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      schemas: ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
      patch: { supported: true },
      bulk: { supported: true, maxOperations: 100, maxPayloadSize: 1000000 },
      filter: { supported: true, maxResults: 100 },
      changePassword: { supported: true },
      sort: { supported: true },
      etag: { supported: false },
      authenticationSchemes: [expect.objectContaining({ type: "oauthbearertoken" })],
      meta: { resourceType: "ServiceProviderConfig", location: expect.stringMatching(/\/ServiceProviderConfig$/) },
    });
    expect(typeof r.body.documentationUri).toBe("string");
  });

  it("Schemas: a ListResponse and the full User schema; unknown id 404", async () => {
    const all = await scim(t, undefined, "GET", `${base}/Schemas`);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ schemas: [LIST_URN], totalResults: 1, startIndex: 1, itemsPerPage: 1 });
    const one = await scim(t, undefined, "GET", `${base}/Schemas/${USER_URN}`);
    expect(one.status).toBe(200);
    expect(one.body.id).toBe(USER_URN);
    const names = one.body.attributes.map((a: Body) => a.name);
    for (const n of [
      "userName",
      "name",
      "displayName",
      "nickName",
      "profileUrl",
      "emails",
      "phoneNumbers",
      "addresses",
      "userType",
      "title",
      "preferredLanguage",
      "locale",
      "timezone",
      "active",
      "password",
    ]) {
      expect(names).toContain(n);
    }
    for (const a of one.body.attributes) {
      expect(a).toEqual(
        expect.objectContaining({
          type: expect.any(String),
          multiValued: expect.any(Boolean),
          required: expect.any(Boolean),
          mutability: expect.any(String),
          returned: expect.any(String),
          uniqueness: expect.any(String),
          caseExact: expect.any(Boolean),
        }),
      );
      for (const sub of a.subAttributes ?? []) expect(sub).toEqual(expect.objectContaining({ type: expect.any(String), mutability: expect.any(String) }));
    }
    expect(one.body.attributes.find((a: Body) => a.name === "password")).toMatchObject({ mutability: "writeOnly", returned: "never" });
    expect(one.body.attributes.find((a: Body) => a.name === "userName")).toMatchObject({ required: true, uniqueness: "server", caseExact: false });
    expectError(await scim(t, undefined, "GET", `${base}/Schemas/urn:nope`), 404, "noTarget");
  });

  it("ResourceTypes: list and User; unknown 404", async () => {
    const all = await scim(t, undefined, "GET", `${base}/ResourceTypes`);
    expect(all.body).toMatchObject({ totalResults: 1, Resources: [{ id: "User", endpoint: "/Users", schema: USER_URN }] });
    const one = await scim(t, undefined, "GET", `${base}/ResourceTypes/User`);
    expect(one.body).toMatchObject({ id: "User", name: "User", meta: { resourceType: "ResourceType" } });
    expectError(await scim(t, undefined, "GET", `${base}/ResourceTypes/Group`), 404, "noTarget");
  });
});

describe("create and read", () => {
  let id: string;
  it("POST /Users: 201, Location = meta.location, every attribute round-trips, password never returned", async () => {
    const r = await scim(t, manager.pat, "POST", `${base}/Users`, FULL);
    expect(r.status).toBe(201);
    id = r.body.id;
    expect(r.headers.get("location")).toBe(r.body.meta.location);
    expect(r.body.meta.location).toBe(`${t.url}${base}/Users/${id}`);
    const { password: _password, ...expected } = FULL;
    expect(r.body).toMatchObject(expected);
    expect(r.body.emails[1]).toEqual({ value: "babs@jensen.org", type: "home", primary: false });
    expect(r.body.addresses[0].formatted).toBe("100 Universal City Plaza\nHollywood, CA 91608 USA");
    expect(r.body.password).toBeUndefined();
    expect(r.body.meta).toMatchObject({ resourceType: "User", created: expect.stringMatching(/Z$/), lastModified: expect.stringMatching(/Z$/) });
    expect(() => new SCIMMY.Schemas.User(r.body, "out")).not.toThrow();

    const g = await scim(t, manager.pat, "GET", `${base}/Users/${id}`);
    expect(g.status).toBe(200);
    expect(g.body).toEqual(r.body);
    // externalId belongs to the provisioner that set it: other callers do not see it.
    const { externalId: _e, ...withoutExternalId } = r.body;
    expect((await scim(t, auditor.pat, "GET", `${base}/Users/${id}`)).body).toEqual(withoutExternalId);
    const row = await t.server.db.prisma.user.findUniqueOrThrow({ where: { id }, select: { passwordHash: true, state: true } });
    expect(row.passwordHash).toMatch(/^\$argon2id\$/);
    expect(row.state).toBe("ACTIVE");
  });

  it("the v2 API shows the primary email and phone", async () => {
    const res = await rest(t.url, t.pat, "GET", `/v2/users/${id}`);
    const user = (await json<{ user: Body }>(res)).user;
    expect(user.username).toBe("Barbara.Jensen@example.com");
    expect(user.human.email.email).toBe("bjensen@example.com");
    expect(user.human.phone.phone).toBe("+1 555 555 5555");
    expect(user.human.profile).toMatchObject({ givenName: "Barbara", familyName: "Jensen", displayName: "Babs Jensen" });
  });

  it("a v2 UpdateUser of the email and phone updates the primary entries", async () => {
    const res = await rest(t.url, t.pat, "POST", `/v2/users/${id}`, {
      human: { email: { email: "barbara@example.com" }, phone: { phone: "+1 555 000 0000" } },
    });
    expect(res.status).toBe(200);
    const g = await scim(t, manager.pat, "GET", `${base}/Users/${id}`);
    expect(g.body.emails).toEqual([
      { value: "barbara@example.com", type: "work", primary: true },
      { value: "babs@jensen.org", type: "home", primary: false },
    ]);
    expect(g.body.phoneNumbers[0]).toEqual({ value: "+1 555 000 0000", type: "work", primary: true });
  });

  it("a v2 CreateUser is a SCIM user with its email as the primary entry", async () => {
    const v2 = await createHuman(t, orgId, "v2-made");
    const g = await scim(t, manager.pat, "GET", `${base}/Users/${v2}`);
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ userName: "v2-made", emails: [{ value: "v2-made@example.com", primary: true }], active: true });
  });

  it("a minimal create: only userName", async () => {
    const r = await scim(t, manager.pat, "POST", `${base}/Users`, { schemas: [USER_URN], userName: "minimal" });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ schemas: [USER_URN], id: r.body.id, userName: "minimal", active: true, meta: expect.any(Object) });
    expect(() => new SCIMMY.Schemas.User(r.body, "out")).not.toThrow();
  });

  it("userName is unique case-insensitively: 409 uniqueness", async () => {
    expectError(await scim(t, manager.pat, "POST", `${base}/Users`, newUser("barbara.jensen@EXAMPLE.com")), 409, "uniqueness");
  });

  it("invalid values are 400 invalidValue", async () => {
    const bad: [string, Record<string, unknown>][] = [
      ["missing userName", { schemas: [USER_URN] }],
      ["userName not a string", { schemas: [USER_URN], userName: 5 }],
      ["active not a boolean", newUser("bad1", { active: "yes" })],
      ["profileUrl not http", newUser("bad2", { profileUrl: "javascript:alert(1)" })],
      ["locale not BCP 47", newUser("bad3", { locale: "en US!" })],
      ["timezone not IANA", newUser("bad4", { timezone: "Mars/Olympus" })],
      [
        "two primary emails",
        newUser("bad5", {
          emails: [
            { value: "a@example.com", primary: true },
            { value: "b@example.com", primary: true },
          ],
        }),
      ],
      ["email not an address", newUser("bad6", { emails: [{ value: "nope" }] })],
      ["emails not an array", newUser("bad7", { emails: { value: "a@example.com" } })],
      ["weak password", newUser("bad8", { password: "short" })],
    ];
    for (const [what, body] of bad) {
      const r = await scim(t, manager.pat, "POST", `${base}/Users`, body);
      expect([what, r.status, r.body.scimType]).toEqual([what, 400, "invalidValue"]);
    }
  });

  it("malformed JSON or a body without the User schema: 400 invalidSyntax", async () => {
    expectError(await scim(t, manager.pat, "POST", `${base}/Users`, "{not json"), 400, "invalidSyntax");
    expectError(await scim(t, manager.pat, "POST", `${base}/Users`, { userName: "noschema" }), 400, "invalidSyntax");
    expectError(await scim(t, manager.pat, "POST", `${base}/Users`, "[1]"), 400, "invalidSyntax");
  });

  it("content type and Accept: 415 and 406", async () => {
    const r = await scim(t, manager.pat, "POST", `${base}/Users`, "userName=x", { "content-type": "application/x-www-form-urlencoded" });
    expectError(r, 415);
    expectError(await scim(t, manager.pat, "GET", `${base}/Users`, undefined, { accept: "text/html" }), 406);
    // application/json is accepted as well (RFC 7644 §3.1).
    const j = await scim(t, manager.pat, "POST", `${base}/Users`, newUser("json-client"), { "content-type": "application/json", accept: "application/json" });
    expect(j.status).toBe(201);
  });

  it("unknown id: 404 noTarget", async () => {
    expectError(await scim(t, manager.pat, "GET", `${base}/Users/does-not-exist`), 404, "noTarget");
    expectError(await scim(t, manager.pat, "GET", `${base}/Users/%E0%A4%A`), 400);
    expectError(await scim(t, manager.pat, "GET", `${base}/Nope`), 404);
  });
});

describe("routing", () => {
  it("endpoint names are case-insensitive, one trailing slash is ignored, a wrong method or deeper path is 404", async () => {
    const created = await scim(t, manager.pat, "POST", `${base}/users/`, newUser("routing-case"));
    expect(created.status).toBe(201);
    expect(created.headers.get("location")).toBe(`${t.url}${base}/Users/${created.body.id}`);
    expect((await scim(t, manager.pat, "GET", `${base}/USERS/${created.body.id}/`)).body.userName).toBe("routing-case");
    expect((await scim(t, undefined, "GET", `/SCIM/v2/${orgId}/serviceproviderconfig`)).status).toBe(200);
    expectError(await scim(t, manager.pat, "PATCH", `${base}/Users`), 404);
    expectError(await scim(t, manager.pat, "GET", `${base}/Users/${created.body.id}/emails`), 404);
    expectError(await scim(t, manager.pat, "GET", `${base}//Users`), 404);
  });

  it("HEAD answers a GET's status and headers without a body", async () => {
    const r = await fetch(`${t.url}${base}/ServiceProviderConfig`, { method: "HEAD" });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^application\/scim\+json/);
    expect(Number(r.headers.get("content-length"))).toBeGreaterThan(100);
    expect(await r.text()).toBe("");
  });

  it("is served over HTTP/2 (h2c) as well", async () => {
    const http2 = await import("node:http2");
    const session = http2.connect(t.url);
    try {
      const { status, type, body } = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        const req = session.request({ ":method": "GET", ":path": `${base}/Users?count=1`, authorization: `Bearer ${manager.pat}` });
        let status = 0;
        let type = "";
        let body = "";
        req.on("response", (h) => {
          status = Number(h[":status"]);
          type = String(h["content-type"]);
        });
        req.setEncoding("utf8");
        req.on("data", (c: string) => {
          body += c;
        });
        req.on("end", () => resolve({ status, type, body }));
        req.on("error", reject);
        req.end();
      });
      expect({ status, type }).toEqual({ status: 200, type: expect.stringMatching(/^application\/scim\+json/) });
      const list = JSON.parse(body);
      expect(list.schemas).toEqual([LIST_URN]);
      expect(list.Resources[0].meta.location).toMatch(new RegExp(`/scim/v2/${orgId}/Users/`));
    } finally {
      session.close();
    }
  });
});

describe("authentication, permissions and tenancy", () => {
  it("no token or a bad token: 401 with WWW-Authenticate Bearer", async () => {
    const none = await scim(t, undefined, "GET", `${base}/Users`);
    expectError(none, 401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const bad = await scim(t, "not-a-token", "GET", `${base}/Users`);
    expectError(bad, 401);
    expect(bad.headers.get("www-authenticate")).toMatch(/^Bearer .*invalid_token/);
    expectError(await scim(t, undefined, "POST", `${base}/Bulk`, { schemas: [], Operations: [] }), 401);
  });

  it("a caller without membership in the path org: 404; a member without the permission: 403", async () => {
    expectError(await scim(t, foreign.pat, "GET", `${base}/Users`), 404, "noTarget");
    expectError(await scim(t, foreign.pat, "POST", `${base}/Users`, newUser("foreign-made")), 404, "noTarget");
    const nobody = await caller(t, orgId, "scim-nobody");
    // A member of the org whose roles grant nothing.
    await t.server.db.prisma.orgMember.create({ data: { orgId, userId: nobody.userId, roles: [] } });
    expectError(await scim(t, nobody.pat, "GET", `${base}/Users`), 403);
    expectError(await scim(t, auditor.pat, "POST", `${base}/Users`, newUser("auditor-made")), 403);
    const id = (await scim(t, manager.pat, "POST", `${base}/Users`, newUser("perm-target"))).body.id;
    expectError(await scim(t, auditor.pat, "PUT", `${base}/Users/${id}`, newUser("perm-target")), 403);
    expectError(await scim(t, auditor.pat, "PATCH", `${base}/Users/${id}`, patch({ op: "replace", path: "title", value: "x" })), 403);
    expectError(await scim(t, auditor.pat, "DELETE", `${base}/Users/${id}`), 403);
  });

  it("users of another organization do not exist under this org's path", async () => {
    const theirs = (await scim(t, foreign.pat, "POST", `/scim/v2/${otherOrgId}/Users`, newUser("theirs"))).body.id;
    expect(theirs).toBeTruthy();
    expectError(await scim(t, t.pat, "GET", `${base}/Users/${theirs}`), 404, "noTarget");
    expectError(await scim(t, t.pat, "DELETE", `${base}/Users/${theirs}`), 404, "noTarget");
    const list = await scim(t, t.pat, "GET", `${base}/Users?filter=${encodeURIComponent('userName eq "theirs"')}`);
    expect(list.body.totalResults).toBe(0);
    const mine = await scim(t, foreign.pat, "GET", `/scim/v2/${otherOrgId}/Users`);
    expect(mine.body.Resources.map((u: Body) => u.userName)).toEqual(["theirs"]);
    expectError(await scim(t, t.pat, "GET", "/scim/v2/no-such-org/Users"), 404, "noTarget");
  });

  it("machine users are invisible", async () => {
    const machine = await createMachine(t, orgId, "scim-invisible-machine");
    expectError(await scim(t, manager.pat, "GET", `${base}/Users/${machine}`), 404, "noTarget");
    const list = await scim(t, manager.pat, "GET", `${base}/Users?count=100&filter=${encodeURIComponent('userName sw "scim-"')}`);
    expect(list.body.totalResults).toBe(0);
  });
});

describe("replace and delete", () => {
  it("PUT replaces the whole resource: absent attributes are cleared", async () => {
    const created = (await scim(t, manager.pat, "POST", `${base}/Users`, { ...FULL, userName: "put-me", externalId: "ext-put" })).body;
    const r = await scim(t, manager.pat, "PUT", `${base}/Users/${created.id}`, {
      schemas: [USER_URN],
      userName: "put-me-renamed",
      name: { givenName: "Only" },
      emails: [{ value: "only@example.com", primary: true }],
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      schemas: [USER_URN],
      id: created.id,
      userName: "put-me-renamed",
      name: { givenName: "Only" },
      emails: [{ value: "only@example.com", primary: true }],
      active: true,
      meta: expect.objectContaining({ created: created.meta.created }),
    });
    const v2 = (await json<{ user: Body }>(await rest(t.url, t.pat, "GET", `/v2/users/${created.id}`))).user;
    expect(v2.human.email.email).toBe("only@example.com");
    expect(v2.human.phone?.phone ?? "").toBe("");
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: created.id, type: "user.changed" } });
    expect(events).toHaveLength(1);
  });

  it("PUT of an unknown id: 404; a taken userName: 409", async () => {
    expectError(await scim(t, manager.pat, "PUT", `${base}/Users/nope`, newUser("whatever")), 404, "noTarget");
    const id = (await scim(t, manager.pat, "POST", `${base}/Users`, newUser("put-clash"))).body.id;
    expectError(await scim(t, manager.pat, "PUT", `${base}/Users/${id}`, newUser("MINIMAL")), 409, "uniqueness");
  });

  it("DELETE: 204, a second GET is 404 and the userName is free again", async () => {
    const id = (await scim(t, manager.pat, "POST", `${base}/Users`, newUser("delete-me"))).body.id;
    const d = await scim(t, manager.pat, "DELETE", `${base}/Users/${id}`);
    expect(d.status).toBe(204);
    expect(d.body).toBeUndefined();
    expectError(await scim(t, manager.pat, "GET", `${base}/Users/${id}`), 404, "noTarget");
    expectError(await scim(t, manager.pat, "DELETE", `${base}/Users/${id}`), 404, "noTarget");
    expect((await scim(t, manager.pat, "POST", `${base}/Users`, newUser("DELETE-ME"))).status).toBe(201);
  });
});

describe("active", () => {
  it("active:false refuses the user's token at once; active:true gives access back", async () => {
    const id = (await scim(t, manager.pat, "POST", `${base}/Users`, newUser("deactivated-by-scim", { password: "Scim-Passw0rd!" }))).body.id;
    await t.server.db.prisma.orgMember.create({ data: { orgId, userId: id, roles: ["ORG_AUDITOR"] } });
    const { humanToken } = await import("../support/users.js");
    const token = await humanToken(t, id);
    expect((await scim(t, token, "GET", `${base}/Users/${id}`)).status).toBe(200);
    // An ORG_AUDITOR is changed only by whoever could grant that role (not the ORG_USER_MANAGER).
    const deactivate = patch({ op: "replace", path: "active", value: false });
    expectError(await scim(t, manager.pat, "PATCH", `${base}/Users/${id}`, deactivate), 403);
    const off = await scim(t, t.pat, "PATCH", `${base}/Users/${id}`, deactivate);
    expect(off.body.active).toBe(false);
    expectError(await scim(t, token, "GET", `${base}/Users/${id}`), 401);
    const state = await t.server.db.prisma.user.findUniqueOrThrow({ where: { id }, select: { state: true } });
    expect(state.state).toBe("INACTIVE");
    const on = await scim(t, t.pat, "PUT", `${base}/Users/${id}`, newUser("deactivated-by-scim", { active: true }));
    expect(on.body.active).toBe(true);
    // The deactivation ended the token issued before it (issue 11, finding 9); a new one works.
    expectError(await scim(t, token, "GET", `${base}/Users/${id}`), 401);
    expect((await scim(t, await humanToken(t, id), "GET", `${base}/Users/${id}`)).status).toBe(200);
    const types = (await t.server.db.prisma.event.findMany({ where: { aggregateId: id }, orderBy: { createdAt: "asc" } })).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["user.human.added", "user.deactivated", "user.reactivated"]));
  });

  it("a user cannot deactivate itself", async () => {
    const self = (await scim(t, manager.pat, "POST", `${base}/Users`, newUser("self-deactivator", { password: "Scim-Passw0rd!" }))).body.id;
    await t.server.db.prisma.orgMember.create({ data: { orgId, userId: self, roles: ["ORG_USER_MANAGER"] } });
    const { humanToken } = await import("../support/users.js");
    const token = await humanToken(t, self);
    const r = await scim(t, token, "PATCH", `${base}/Users/${self}`, patch({ op: "replace", path: "active", value: false }));
    expectError(r, 409);
    expect(r.body[DETAIL_URN].id).toBe("Errors.User.DeactivateSelf");
  });
});

describe("externalId", () => {
  it("is scoped per provisioning client: two provisioners do not collide", async () => {
    const other = await caller(t, orgId, "scim-second-provisioner", ["ORG_USER_MANAGER"]);
    const a = await scim(t, manager.pat, "POST", `${base}/Users`, newUser("ext-a", { externalId: "E-1" }));
    expect(a.status).toBe(201);
    // The same externalId from another provisioner is its own id space.
    const b = await scim(t, other.pat, "POST", `${base}/Users`, newUser("ext-b", { externalId: "E-1" }));
    expect(b.status).toBe(201);
    // Within one provisioner it is unique.
    expectError(await scim(t, manager.pat, "POST", `${base}/Users`, newUser("ext-c", { externalId: "E-1" })), 409, "uniqueness");
    const mine = await scim(t, manager.pat, "GET", `${base}/Users?filter=${encodeURIComponent('externalId eq "E-1"')}`);
    expect(mine.body.Resources.map((u: Body) => u.userName)).toEqual(["ext-a"]);
    const theirs = await scim(t, other.pat, "GET", `${base}/Users/${a.body.id}`);
    expect(theirs.body.externalId).toBeUndefined();
  });
});
