// SCIM hardening through the real server (RFC 7643/7644 and the product
// spec): what the other SCIM tests do not pin down, each with the rule it checks.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { type Body, BULK_URN, expectError, newUser, PATCH_URN, patch, SEARCH_URN, scim, USER_URN } from "../fixtures/scim/client.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { caller, createOrg } from "../support/users.js";

let t: TestServer;
let base: string;
let otherBase: string;
let pat: string;
let foreignPat: string;
let n = 0;

beforeAll(async () => {
  t = await startTestServer();
  const orgId = await createOrg(t, "Audit");
  const otherOrgId = await createOrg(t, "AuditOther");
  base = `/scim/v2/${orgId}`;
  otherBase = `/scim/v2/${otherOrgId}`;
  pat = (await caller(t, orgId, "auditor-mgr", ["ORG_USER_MANAGER"])).pat;
  foreignPat = (await caller(t, otherOrgId, "auditor-foreign", ["ORG_USER_MANAGER"])).pat;
});
afterAll(() => t.stop());

async function make(extra: Record<string, unknown> = {}, p = pat, b = base): Promise<Body> {
  const r = await scim(t, p, "POST", `${b}/Users`, newUser(`audit-${++n}`, extra));
  expect([r.status, r.body?.detail]).toEqual([201, undefined]);
  return r.body;
}

const list = (q: string) => scim(t, pat, "GET", `${base}/Users?${q}`);
const filtered = (f: string, extra = "") => list(`filter=${encodeURIComponent(f)}${extra}`);

describe("attribute paths are case-sensitive (the product spec's Filtering section; RFC 7643 §2.1 would fold case)", () => {
  it("in filters: a name in another case is an unknown attribute (400 invalidFilter); the URN prefix matches in any case", async () => {
    const u = await make({ name: { givenName: "Casey", familyName: "Case" } });
    for (const f of [`USERNAME eq "${u.userName}"`, `UserName eq "${u.userName}"`, `Emails.Value eq "${u.emails[0].value}"`, `emails[TYPE eq "work"]`]) {
      const r = await filtered(f);
      expect([f, r.status, r.body.scimType]).toEqual([f, 400, "invalidFilter"]);
    }
    const exact = await filtered(`URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:User:userName eq "${u.userName}"`);
    expect([exact.status, exact.body.totalResults]).toEqual([200, 1]);
  });

  it("in sortBy: UserName is not a sortable attribute", async () => {
    const r = await list("sortBy=UserName");
    expect(r.status).toBe(400);
    expect(r.body.scimType).toBe("invalidValue");
  });

  it('in PATCH value filters: emails[Type eq "work"].value is refused, nothing changes', async () => {
    const u = await make();
    const r = await scim(
      t,
      pat,
      "PATCH",
      `${base}/Users/${u.id}`,
      patch({ op: "replace", path: 'emails[Type eq "work"].value', value: "swapped@example.com" }),
    );
    expect(r.status).toBe(400);
    expect((await scim(t, pat, "GET", `${base}/Users/${u.id}`)).body.emails).toEqual(u.emails);
  });
});

describe("filters", () => {
  it('escapes in string literals: \\" and \\u00e9 match the stored value', async () => {
    const u = await make({ displayName: 'Zoë "Q"', name: { givenName: 'Zo"ë', familyName: "Esc" } });
    const r = await filtered(`name.givenName eq "Zo\\"\\u00eb" and userName eq "${u.userName}"`);
    expect([r.status, r.body.totalResults]).toEqual([200, 1]);
  });

  it("a backslash in a literal is literal for eq, sw, co and ew", async () => {
    const u = await make({ name: { givenName: "Back", familyName: "a\\b%c" } });
    for (const f of ['name.familyName eq "a\\\\b%c"', 'name.familyName sw "a\\\\b"', 'name.familyName co "\\\\b%"', 'name.familyName ew "\\\\b%c"']) {
      const r = await filtered(`${f} and userName eq "${u.userName}"`);
      expect([f, r.status, r.body.totalResults]).toEqual([f, 200, 1]);
    }
  });

  it("a NUL character in a literal is an invalidFilter or no match, never a 500", async () => {
    const r = await filtered('userName eq "a\\u0000b"');
    expect(r.status).not.toBe(500);
    if (r.status !== 200) expectError(r, 400, "invalidFilter");
  });

  it("gt on a boolean, a number for a string, deep nesting: 400 invalidFilter", async () => {
    for (const f of [
      "active gt true",
      "userName eq 12",
      `${"(".repeat(30)}userName eq "x"${")".repeat(30)}`,
      `${"not (".repeat(30)}userName eq "x"${")".repeat(30)}`,
    ]) {
      expectError(await filtered(f), 400, "invalidFilter");
    }
  });

  it("and binds tighter than or; not() negates its parenthesised filter", async () => {
    const a = await make();
    const b = await make();
    const r = await filtered(`userName eq "${a.userName}" or userName eq "${b.userName}" and active eq false`);
    expect(r.body.Resources.map((x: Body) => x.userName)).toEqual([a.userName]);
    const r2 = await filtered(`(userName eq "${a.userName}" or userName eq "${b.userName}") and not (userName eq "${b.userName}")`);
    expect(r2.body.Resources.map((x: Body) => x.userName)).toEqual([a.userName]);
  });
});

describe("paging", () => {
  it("startIndex beyond the total: empty page, itemsPerPage 0; negative count is 0", async () => {
    const r = await list("startIndex=100000");
    expect(r.status).toBe(200);
    expect(r.body.itemsPerPage).toBe(0);
    expect(r.body.Resources ?? []).toEqual([]);
    const z = await list("count=-5");
    expect([z.status, z.body.itemsPerPage, (z.body.Resources ?? []).length]).toEqual([200, 0, 0]);
  });
});

describe("RFC 7644 §3.4.2.3 sorting by a multi-valued attribute", () => {
  it("sortBy=emails uses the primary value, or else the first one", async () => {
    const prefix = `sortmv${++n}`;
    const mk = async (suffix: string, emails: unknown[]) => {
      const r = await scim(t, pat, "POST", `${base}/Users`, { schemas: [USER_URN], userName: `${prefix}-${suffix}`, emails });
      expect(r.status).toBe(201);
    };
    await mk("p", [{ value: `b-${prefix}@example.com`, primary: true }]);
    await mk("first", [{ value: `a-${prefix}@example.com` }, { value: `z-${prefix}@example.com` }]);
    await mk("third", [{ value: `c-${prefix}@example.com`, type: "home" }]);
    const r = await filtered(`userName sw "${prefix}-"`, "&sortBy=emails&sortOrder=ascending");
    expect(r.body.Resources.map((u: Body) => u.userName)).toEqual([`${prefix}-first`, `${prefix}-p`, `${prefix}-third`]);
  });
});

describe("RFC 7644 §3.9 attribute projection", () => {
  it("excludedAttributes=name.givenName drops only that sub-attribute", async () => {
    const u = await make({ name: { givenName: "Drop", familyName: "Keep" } });
    const r = await scim(t, pat, "GET", `${base}/Users/${u.id}?excludedAttributes=name.givenName`);
    expect(r.status).toBe(200);
    expect(r.body.name).toEqual({ familyName: "Keep" });
  });

  it("attributes keeps id and schemas (returned: always) and never returns password", async () => {
    const u = await make({ password: "Audit-Passw0rd!" });
    const r = await scim(t, pat, "GET", `${base}/Users/${u.id}?attributes=password,userName`);
    expect(r.body.id).toBe(u.id);
    expect(r.body.schemas).toEqual([USER_URN]);
    expect(r.body.password).toBeUndefined();
    expect(r.body.emails).toBeUndefined();
  });
});

describe("RFC 7644 §3.5.2 PATCH", () => {
  it("add of an email that is already there changes nothing (§3.5.2.1: no duplicate)", async () => {
    const u = await make();
    const r = await scim(t, pat, "PATCH", `${base}/Users/${u.id}`, patch({ op: "add", path: "emails", value: [{ value: u.emails[0].value, type: "work" }] }));
    expect([r.status, r.body.detail]).toEqual([200, undefined]);
    expect(r.body.emails).toEqual(u.emails);
  });

  it("remove of userName (required) is 400, not a 500", async () => {
    const u = await make();
    const r = await scim(t, pat, "PATCH", `${base}/Users/${u.id}`, patch({ op: "remove", path: "userName" }));
    expect(r.status).toBe(400);
  });

  it("path with the core URN prefix: urn:...:User:name.givenName", async () => {
    const u = await make();
    const r = await scim(t, pat, "PATCH", `${base}/Users/${u.id}`, patch({ op: "replace", path: `${USER_URN}:name.givenName`, value: "Urned" }));
    expect([r.status, r.body.name?.givenName]).toEqual([200, "Urned"]);
  });

  it("an enterprise-extension path (Entra's default mapping) does not fail the whole PATCH", async () => {
    const u = await make();
    const r = await scim(
      t,
      pat,
      "PATCH",
      `${base}/Users/${u.id}`,
      patch(
        { op: "Replace", path: "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", value: "Sales" },
        { op: "Replace", path: "title", value: "Lead" },
      ),
    );
    expect([r.status, r.body.title]).toEqual([200, "Lead"]);
  });
});

describe("RFC 7643 §2.4: at most one primary", () => {
  it("POST with two primary emails: 400 invalidValue or one primary kept", async () => {
    const r = await scim(
      t,
      pat,
      "POST",
      `${base}/Users`,
      newUser(`audit-${++n}`, {
        emails: [
          { value: "p1@example.com", primary: true },
          { value: "p2@example.com", primary: true },
        ],
      }),
    );
    if (r.status === 201) expect(r.body.emails.filter((e: Body) => e.primary === true)).toHaveLength(1);
    else expectError(r, 400, "invalidValue");
  });
});

describe("robustness: client input never gives a 500", () => {
  it("a very long email value", async () => {
    const r = await scim(t, pat, "POST", `${base}/Users`, newUser(`audit-${++n}`, { emails: [{ value: `${"a".repeat(20000)}@example.com`, primary: true }] }));
    expect(r.status).not.toBe(500);
  });

  it("a very long displayName and name.givenName", async () => {
    const r = await scim(t, pat, "POST", `${base}/Users`, newUser(`audit-${++n}`, { displayName: "d".repeat(200000), name: { givenName: "g".repeat(50000) } }));
    expect(r.status).not.toBe(500);
  });

  it("a NUL character in a string attribute", async () => {
    const r = await scim(t, pat, "POST", `${base}/Users`, newUser(`audit-${++n}`, { displayName: "a\u0000b" }));
    expect(r.status).not.toBe(500);
    const r2 = await scim(t, pat, "POST", `${base}/Users`, newUser(`audit-nul\u0000${++n}`));
    expect(r2.status).not.toBe(500);
  });

  it("a body that is not valid UTF-8 is 400 invalidSyntax, not stored with U+FFFD (RFC 8259 §8.1)", async () => {
    const json = Buffer.from(JSON.stringify(newUser(`audit-utf8-${++n}`, { displayName: "Zo-PLACEHOLDER" })));
    const at = json.indexOf("PLACEHOLDER");
    const bad = Buffer.concat([json.subarray(0, at), Buffer.from([0xc3, 0x28]), json.subarray(at + "PLACEHOLDER".length)]);
    const res = await fetch(`${t.url}${base}/Users`, {
      method: "POST",
      headers: { authorization: `Bearer ${pat}`, "content-type": "application/scim+json" },
      body: bad,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Body).scimType).toBe("invalidSyntax");
    const stored = await filtered(`userName sw "audit-utf8-"`);
    expect(stored.body.totalResults).toBe(0);
  });

  it("a NUL character in a resource id or externalId is 404/400, not a 500", async () => {
    for (const method of ["GET", "DELETE"]) {
      const r = await scim(t, pat, method, `${base}/Users/a%00b`);
      expect([method, r.status]).toEqual([method, 404]);
    }
    const put = await scim(t, pat, "PUT", `${base}/Users/a%00b`, newUser(`audit-${++n}`));
    expect(put.status).toBe(404);
    const pa = await scim(t, pat, "PATCH", `${base}/Users/a%00b`, patch({ op: "replace", path: "title", value: "x" }));
    expect(pa.status).toBe(404);
    const ext = await scim(t, pat, "POST", `${base}/Users`, newUser(`audit-${++n}`, { externalId: "e\u0000x" }));
    expect(ext.status).not.toBe(500);
  });

  it("a NUL character in the organization id (an instance administrator's token): 404, not a 500", async () => {
    for (const [method, path] of [
      ["GET", "/scim/v2/a%00b/Users"],
      ["GET", "/scim/v2/a%00b/Users/x"],
      ["DELETE", "/scim/v2/a%00b/Users/x"],
    ]) {
      const r = await scim(t, t.pat, method as string, path as string);
      expect([method, path, r.status]).toEqual([method, path, 404]);
    }
    const post = await scim(t, t.pat, "POST", "/scim/v2/a%00b/Users", newUser(`audit-${++n}`));
    expect(post.status).toBe(404);
  });

  it("a JSON array body, numbers for strings, null userName", async () => {
    expectError(await scim(t, pat, "POST", `${base}/Users`, "[1,2]"), 400, "invalidSyntax");
    expectError(await scim(t, pat, "POST", `${base}/Users`, newUser(`audit-${++n}`, { displayName: 5 })), 400, "invalidValue");
    expectError(await scim(t, pat, "POST", `${base}/Users`, { schemas: [USER_URN], userName: null }), 400, "invalidValue");
  });

  it("invalid UTF-8 in the body is not a 500", async () => {
    const res = await fetch(`${t.url}${base}/Users`, {
      method: "POST",
      headers: { authorization: `Bearer ${pat}`, "content-type": "application/scim+json" },
      body: Buffer.concat([Buffer.from(`{"schemas":["${USER_URN}"],"userName":"audit-utf8-`), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
    });
    expect(res.status).not.toBe(500);
  });

  it("a .search without a token is 401 whatever its body", async () => {
    expectError(await scim(t, undefined, "POST", `${base}/Users/.search`, { nothing: true }), 401);
  });
});

describe("RFC 7644 §3.7 Bulk", () => {
  const bulk = (Operations: unknown[], extra: Record<string, unknown> = {}) => ({ schemas: [BULK_URN], Operations, ...extra });

  it("a malformed percent-encoding in an operation's path fails that operation with 400/404, not 500", async () => {
    const r = await scim(t, pat, "POST", `${base}/Bulk`, bulk([{ method: "DELETE", path: "/Users/%E0%A4%A" }]));
    expect(r.status).toBe(200);
    expect(r.body.Operations[0].status).not.toBe("500");
  });

  it("a duplicate bulkId fails the second POST (bulkIds are unique within a request)", async () => {
    const r = await scim(
      t,
      pat,
      "POST",
      `${base}/Bulk`,
      bulk([
        { method: "POST", path: "/Users", bulkId: "dup", data: newUser(`audit-${++n}`) },
        { method: "POST", path: "/Users", bulkId: "dup", data: newUser(`audit-${++n}`) },
      ]),
    );
    expect(r.status).toBe(200);
    expect(r.body.Operations.map((o: Body) => o.status)).toEqual(["201", "400"]);
  });

  it("an operation on another organization's user is 404 for that operation", async () => {
    const theirs = await make({}, foreignPat, otherBase);
    const r = await scim(
      t,
      pat,
      "POST",
      `${base}/Bulk`,
      bulk([
        { method: "PATCH", path: `/Users/${theirs.id}`, data: patch({ op: "replace", path: "title", value: "pwned" }) },
        { method: "DELETE", path: `/Users/${theirs.id}` },
      ]),
    );
    expect(r.body.Operations.map((o: Body) => o.status)).toEqual(["404", "404"]);
    const still = await scim(t, foreignPat, "GET", `${otherBase}/Users/${theirs.id}`);
    expect([still.status, still.body.title]).toEqual([200, undefined]);
  });

  it("a caller without membership in the path's organization: 404 for the whole request, as on every other endpoint", async () => {
    const r = await scim(t, foreignPat, "POST", `${base}/Bulk`, bulk([{ method: "POST", path: "/Users", bulkId: "x", data: newUser(`audit-${++n}`) }]));
    expectError(r, 404, "noTarget");
  });

  it("an unknown method or path fails only that operation", async () => {
    const r = await scim(
      t,
      pat,
      "POST",
      `${base}/Bulk`,
      bulk([
        { method: "GET", path: "/Users" },
        { method: "POST", path: "/Users", bulkId: "ok", data: newUser(`audit-${++n}`) },
      ]),
    );
    expect(r.body.Operations.map((o: Body) => o.status)).toEqual(["400", "201"]);
    expect(r.body.Operations[1].location).toMatch(/^http:\/\//);
  });
});

describe("errors and headers", () => {
  it("405-ish: a wrong method on a known endpoint is an application/scim+json error", async () => {
    const r = await scim(t, pat, "DELETE", `${base}/Users`);
    expect([404, 405]).toContain(r.status);
    expect(r.headers.get("content-type")).toMatch(/^application\/scim\+json/);
  });

  it("413 and 415 bodies are SCIM errors", async () => {
    const big = await scim(t, pat, "POST", `${base}/Users`, JSON.stringify({ schemas: [USER_URN], userName: "x".repeat(1_100_000) }));
    expectError(big, 413);
    const wrong = await scim(t, pat, "POST", `${base}/Users`, "userName=x", { "content-type": "text/plain" });
    expectError(wrong, 415);
  });

  it("no meta.version (ETags unsupported), meta.location absolute", async () => {
    const u = await make();
    expect(u.meta.version).toBeUndefined();
    expect(u.meta.location).toMatch(/^http:\/\/.+\/Users\//);
  });

  it("a SearchRequest with count above the maximum is clamped, itemsPerPage tells", async () => {
    const r = await scim(t, pat, "POST", `${base}/Users/.search`, { schemas: [SEARCH_URN], count: 1000, startIndex: 1 });
    expect(r.status).toBe(200);
    expect(r.body.itemsPerPage).toBeLessThanOrEqual(100);
  });

  it("PatchOp with the URN in another case is accepted", async () => {
    const u = await make();
    const r = await scim(t, pat, "PATCH", `${base}/Users/${u.id}`, {
      schemas: [PATCH_URN.toLowerCase()],
      Operations: [{ op: "replace", path: "title", value: "t" }],
    });
    expect(r.status).toBe(200);
  });
});

describe("uniqueness and concurrency", () => {
  it("PATCH userName onto another user's name in another case: 409 uniqueness; its own name in another case: 200", async () => {
    const a = await make();
    const b = await make();
    expectError(
      await scim(t, pat, "PATCH", `${base}/Users/${b.id}`, patch({ op: "replace", path: "userName", value: a.userName.toUpperCase() })),
      409,
      "uniqueness",
    );
    const self = await scim(t, pat, "PATCH", `${base}/Users/${a.id}`, patch({ op: "replace", path: "userName", value: a.userName.toUpperCase() }));
    expect([self.status, self.body.userName]).toEqual([200, a.userName.toUpperCase()]);
  });

  it("the same externalId twice from one provisioner is 409 uniqueness or accepted, never a 500", async () => {
    const first = await scim(t, pat, "POST", `${base}/Users`, newUser(`audit-${++n}`, { externalId: "dup-ext" }));
    expect(first.status).toBe(201);
    const second = await scim(t, pat, "POST", `${base}/Users`, newUser(`audit-${++n}`, { externalId: "dup-ext" }));
    expect(second.status).not.toBe(500);
    if (second.status !== 201) expectError(second, 409, "uniqueness");
    const b = await make();
    const put = await scim(t, pat, "PUT", `${base}/Users/${b.id}`, newUser(b.userName, { externalId: "dup-ext" }));
    expect(put.status).toBe(second.status === 201 ? 200 : 409);
  });

  it("concurrent creates of one userName: one 201, the others 409 uniqueness", async () => {
    const userName = `audit-race-${++n}`;
    const rs = await Promise.all(Array.from({ length: 6 }, () => scim(t, pat, "POST", `${base}/Users`, newUser(userName))));
    expect(rs.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  });

  it("concurrent PATCH adds of different emails all land (no lost update)", async () => {
    const u = await make();
    const rs = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        scim(
          t,
          pat,
          "PATCH",
          `${base}/Users/${u.id}`,
          patch({ op: "add", path: "emails", value: [{ value: `c${i}-${u.userName}@example.com`, type: "other" }] }),
        ),
      ),
    );
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const after = await scim(t, pat, "GET", `${base}/Users/${u.id}`);
    expect(after.body.emails).toHaveLength(6);
  });

  it("DELETE racing PATCH and PUT: 200/204/404 only, never a 500", async () => {
    for (let round = 0; round < 5; round++) {
      const u = await make();
      const rs = await Promise.all([
        scim(t, pat, "PATCH", `${base}/Users/${u.id}`, patch({ op: "replace", path: "title", value: "x" })),
        scim(t, pat, "DELETE", `${base}/Users/${u.id}`),
        scim(t, pat, "PUT", `${base}/Users/${u.id}`, newUser(u.userName, { title: "y" })),
      ]);
      for (const r of rs) expect([200, 204, 404]).toContain(r.status);
    }
  });
});

describe("more races", () => {
  it("two DELETEs of one user (a provisioner's retry): 204 and 404, never a 500", async () => {
    for (let round = 0; round < 5; round++) {
      const u = await make();
      const rs = await Promise.all([scim(t, pat, "DELETE", `${base}/Users/${u.id}`), scim(t, pat, "DELETE", `${base}/Users/${u.id}`)]);
      expect(rs.map((r) => r.status).sort()).toEqual([204, 404]);
    }
  });

  it("a deactivating PATCH racing a DELETE: 200/204/404 only (no deadlock, no 500)", async () => {
    for (let round = 0; round < 5; round++) {
      const u = await make();
      const rs = await Promise.all([
        scim(t, pat, "PATCH", `${base}/Users/${u.id}`, patch({ op: "replace", path: "active", value: "False" })),
        scim(t, pat, "DELETE", `${base}/Users/${u.id}`),
      ]);
      for (const r of rs) expect([200, 204, 404]).toContain(r.status);
    }
  });
});

describe("more protocol checks", () => {
  it("Bulk: a PATCH referring to a bulkId whose POST comes later in the request", async () => {
    const r = await scim(t, pat, "POST", `${base}/Bulk`, {
      schemas: [BULK_URN],
      Operations: [
        { method: "PATCH", path: "/Users/bulkId:later", data: patch({ op: "replace", path: "title", value: "fwd" }) },
        { method: "POST", path: "/Users", bulkId: "later", data: newUser(`audit-${++n}`) },
      ],
    });
    expect(r.status).toBe(200);
    // RFC 7644 §3.7.2 lets a provider resolve it or answer 409 for that operation; a 409 must carry a SCIM error.
    const [first] = r.body.Operations;
    expect(["200", "409"]).toContain(first.status);
    if (first.status === "409") expect(first.response.status).toBe("409");
  });

  it("Accept: application/scim+json;q=0.9, application/json is fine; text/html alone is 406 as SCIM JSON", async () => {
    const ok = await scim(t, pat, "GET", `${base}/Users?count=1`, undefined, { accept: "application/scim+json;q=0.9, application/json" });
    expect(ok.status).toBe(200);
    const no = await scim(t, pat, "GET", `${base}/Users?count=1`, undefined, { accept: "text/html" });
    expectError(no, 406);
  });

  it("a bad token is 401 as SCIM JSON; a member without the permission on .search 403", async () => {
    expectError(await scim(t, "nope", "GET", `${base}/Users`), 401);
    expectError(await scim(t, "nope", "POST", `${base}/Bulk`, { schemas: [BULK_URN], Operations: [] }), 401);
  });

  it("filter pr on emails and on name.givenName", async () => {
    const u = await make({ name: { givenName: "Pres" } });
    for (const f of [`emails pr and userName eq "${u.userName}"`, `name.givenName pr and userName eq "${u.userName}"`]) {
      const r = await filtered(f);
      expect([f, r.status, r.body.totalResults]).toEqual([f, 200, 1]);
    }
  });

  it("PATCH remove by value filter and of a sub-attribute", async () => {
    const u = await make({
      emails: [
        { value: "keep@example.com", type: "work", primary: true },
        { value: "gone@example.com", type: "home" },
      ],
      name: { givenName: "G", familyName: "F" },
    });
    const r = await scim(
      t,
      pat,
      "PATCH",
      `${base}/Users/${u.id}`,
      patch({ op: "remove", path: 'emails[value eq "GONE@example.com"]' }, { op: "remove", path: "name.givenName" }),
    );
    expect(r.body.emails.map((e: Body) => e.value)).toEqual(["keep@example.com"]);
    expect(r.body.name).toEqual({ familyName: "F" });
  });

  it('PATCH active as "False" through a path-less Replace and an unknown id 404 noTarget', async () => {
    const u = await make();
    const r = await scim(t, pat, "PATCH", `${base}/Users/${u.id}`, patch({ op: "Replace", value: { active: "False" } }));
    expect(r.body.active).toBe(false);
  });
});

describe("robustness: expensive bodies", () => {
  it("a PATCH of thousands of add operations answers in reasonable time", async () => {
    const u = await make();
    const ops = Array.from({ length: 12000 }, (_, i) => ({ op: "add", path: "emails", value: [{ value: `m${i}@x.io` }] }));
    const started = Date.now();
    const r = await scim(t, pat, "PATCH", `${base}/Users/${u.id}`, patch(...ops));
    const took = Date.now() - started;
    // More than the domain's 20 entries: refused, and quickly (the event loop serves everyone else meanwhile).
    expectError(r, 400, "invalidValue");
    expect(took).toBeLessThan(3000);
  }, 60_000);

  it("a deeply nested JSON value is 400, not a 500 or a crash", async () => {
    const deep = `${"[".repeat(200000)}${"]".repeat(200000)}`;
    const r = await scim(t, pat, "POST", `${base}/Users`, `{"schemas":["${USER_URN}"],"userName":"audit-deep","displayName":${deep}}`);
    expect(r.status).toBe(400);
  }, 60_000);
});

describe("absolute URLs behind a proxy", () => {
  // Behind a TLS-terminating proxy the request arrives over plain HTTP with the upstream's Host: with
  // SVC_EXTERNAL_URL set, meta.location and Location are built on the public URL instead.
  it("follow SVC_EXTERNAL_URL when it is set, path prefix included", async () => {
    const proxied = await startTestServer({ SVC_EXTERNAL_URL: "https://idp.example.test/iam" });
    try {
      const orgId = await createOrg(proxied, "Proxied");
      const token = (await caller(proxied, orgId, "proxied-mgr", ["ORG_USER_MANAGER"])).pat;
      const created = await scim(proxied, token, "POST", `/scim/v2/${orgId}/Users`, newUser("proxied-1"));
      expect(created.status).toBe(201);
      const expected = `https://idp.example.test/iam/scim/v2/${orgId}/Users/${created.body.id}`;
      expect(created.headers.get("location")).toBe(expected);
      expect(created.body.meta.location).toBe(expected);
      expect((await scim(proxied, token, "GET", `/scim/v2/${orgId}/Users/${created.body.id}`)).body.meta.location).toBe(expected);
      const spc = await scim(proxied, undefined, "GET", `/scim/v2/${orgId}/ServiceProviderConfig`);
      expect(spc.body.meta.location).toBe(`https://idp.example.test/iam/scim/v2/${orgId}/ServiceProviderConfig`);
    } finally {
      await proxied.stop();
    }
  });

  it("follow the request's own origin when it is not set", async () => {
    const created = await make();
    expect(created.meta.location).toBe(`${t.url}${base}/Users/${created.id}`);
  });
});
