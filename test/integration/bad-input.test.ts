// Client mistakes get InvalidArgument-shaped answers, never a 500.

import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.stop());

const headers = () => ({ authorization: `Bearer ${t.pat}`, "content-type": "application/json" });

describe("REST", () => {
  it("bad JSON is 400 InvalidArgument", async () => {
    const res = await fetch(`${t.url}/v2/users`, { method: "POST", headers: headers(), body: '{"query": ' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: number }).code).toBe(3);
  });

  it("an unknown field is 400 InvalidArgument", async () => {
    const res = await fetch(`${t.url}/v2/users`, { method: "POST", headers: headers(), body: '{"nonsense": 1}' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: number }).code).toBe(3);
  });

  it("a wrong content type is 400 InvalidArgument", async () => {
    const res = await fetch(`${t.url}/v2/users`, { method: "POST", headers: { ...headers(), "content-type": "text/plain" }, body: "{}" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: number }).code).toBe(3);
  });

  it("a wrongly typed value is 400 InvalidArgument", async () => {
    const res = await fetch(`${t.url}/v2/users`, { method: "POST", headers: headers(), body: '{"query": {"limit": "many"}}' });
    expect(res.status).toBe(400);
  });

  it("a limit above 1000 is 400 InvalidArgument", async () => {
    const res = await rest(t.url, t.pat, "POST", "/v2/users", { query: { limit: 1001 } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { details: { reason: string }[] }).details[0]?.reason).toBe("Errors.List.LimitTooHigh");
  });

  it("an unknown path is a 404 JSON error", async () => {
    const res = await fetch(`${t.url}/v2/nothing-here`, { headers: headers() });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: number }).code).toBe(5);
  });

  it("a user create with invalid fields is 400 and writes nothing", async () => {
    const instance = (await (await rest(t.url, t.pat, "GET", "/v2/instance")).json()) as { instance: { defaultOrganizationId: string } };
    const before = await t.server.db.prisma.user.count();
    const eventsBefore = await t.server.db.prisma.event.count();
    const cases = [
      { organizationId: instance.instance.defaultOrganizationId, human: { profile: { givenName: "A" }, email: { email: "a@example.com" } } },
      { organizationId: instance.instance.defaultOrganizationId, human: { profile: { givenName: "A", familyName: "B" }, email: { email: "not-an-email" } } },
      {
        organizationId: instance.instance.defaultOrganizationId,
        human: { profile: { givenName: "A", familyName: "B" }, email: { email: "a@example.com" }, password: { password: "short" } },
      },
      { organizationId: instance.instance.defaultOrganizationId, machine: { name: "m" } },
      { organizationId: instance.instance.defaultOrganizationId, username: "with space", machine: { name: "m" } },
      { organizationId: instance.instance.defaultOrganizationId },
      { organizationId: "", username: "m", machine: { name: "m" } },
    ];
    for (const body of cases) {
      const res = await rest(t.url, t.pat, "POST", "/v2/users/new", body);
      expect([400, 404]).toContain(res.status);
    }
    expect(await t.server.db.prisma.user.count()).toBe(before);
    expect(await t.server.db.prisma.event.count()).toBe(eventsBefore);
  });

  it("a duplicate username (any case) is 409 AlreadyExists", async () => {
    const instance = (await (await rest(t.url, t.pat, "GET", "/v2/instance")).json()) as { instance: { defaultOrganizationId: string } };
    const res = await rest(t.url, t.pat, "POST", "/v2/users/new", {
      organizationId: instance.instance.defaultOrganizationId,
      username: "SVC-Admin",
      machine: { name: "dup" },
    });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { code: number }).code).toBe(6);
  });
});

describe("Connect", () => {
  it("bad JSON is invalid_argument (HTTP 400)", async () => {
    const res = await fetch(`${t.url}/svc.user.v2.UserService/ListUsers`, { method: "POST", headers: headers(), body: "{nope" });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
  });

  it("an unknown field is invalid_argument (HTTP 400)", async () => {
    const res = await fetch(`${t.url}/svc.user.v2.UserService/ListUsers`, { method: "POST", headers: headers(), body: '{"bogus": true}' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe("invalid_argument");
  });

  it("a content type no protocol speaks is refused as the Connect protocol prescribes (415), not a 500", async () => {
    const res = await fetch(`${t.url}/svc.user.v2.UserService/ListUsers`, {
      method: "POST",
      headers: { ...headers(), "content-type": "text/plain" },
      body: "{}",
    });
    expect(res.status).toBe(415);
  });
});

describe("text PostgreSQL cannot store (U+0000)", () => {
  // Stored text never holds a NUL: wherever one meets the database first, it is bad input, never an internal error.
  it("in a REST path id, a filter value or a create is 400 InvalidArgument, and nothing is written", async () => {
    for (const path of ["/v2/users/%00", "/v2/organizations/a%00", "/v2/projects/%00x"]) {
      const res = await rest(t.url, t.pat, "GET", path);
      expect([path, res.status]).toEqual([path, 400]);
      expect(((await res.json()) as { code: number }).code).toBe(3);
    }
    const filtered = await rest(t.url, t.pat, "POST", "/v2/users", {
      queries: [{ userNameQuery: { userName: "a\u0000b", method: "TEXT_QUERY_METHOD_CONTAINS" } }],
    });
    expect(filtered.status).toBe(400);
    const instance = (await (await rest(t.url, t.pat, "GET", "/v2/instance")).json()) as { instance: { defaultOrganizationId: string } };
    const before = ((await (await rest(t.url, t.pat, "POST", "/v2/users", {})).json()) as { details: { totalResult: string } }).details.totalResult;
    const created = await rest(t.url, t.pat, "POST", "/v2/users/new", {
      organizationId: instance.instance.defaultOrganizationId,
      username: "nul-description",
      machine: { name: "n", description: "a\u0000b" },
    });
    expect(created.status).toBe(400);
    const after = ((await (await rest(t.url, t.pat, "POST", "/v2/users", {})).json()) as { details: { totalResult: string } }).details.totalResult;
    expect(after).toBe(before);
  });

  it("in an OAuth client id is 400 invalid_request", async () => {
    const res = await fetch(`${t.url}/oauth/v2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials&client_id=a%00b&client_secret=x",
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "invalid_request" });
  });
});

describe("text that is not well-formed Unicode (a lone surrogate spelled in JSON)", () => {
  // JSON can spell a lone UTF-16 surrogate; UTF-8 cannot hold it, PostgreSQL's JSON types refuse it (an event or a
  // SCIM record would fail to be written) and its text columns would store U+FFFD instead. Found by the fuzz test.
  const lone = JSON.stringify("Lo\ud8b4ne");
  const users = async () => ((await (await rest(t.url, t.pat, "POST", "/v2/users", {})).json()) as { details: { totalResult: string } }).details.totalResult;
  const orgId = async () =>
    ((await (await rest(t.url, t.pat, "GET", "/v2/instance")).json()) as { instance: { defaultOrganizationId: string } }).instance.defaultOrganizationId;

  it("SCIM: 400 invalidValue naming the attribute, and nothing is written", async () => {
    const org = await orgId();
    const before = await users();
    const res = await fetch(`${t.url}/scim/v2/${org}/Users`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.pat}`, "content-type": "application/scim+json" },
      body: `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"lone@example.com","name":{"givenName":${lone},"familyName":"F"}}`,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      status: "400",
      scimType: "invalidValue",
      detail: expect.stringContaining("name.givenName holds text that is not well-formed Unicode"),
    });
    expect(await users()).toBe(before);
  });

  it("REST and Connect JSON (in a string field and inside a google.protobuf.Struct): 400 InvalidArgument, and nothing is written", async () => {
    const org = await orgId();
    const before = await users();
    const body = (username: string, givenName: string) =>
      `{"organizationId":"${org}","username":"${username}","human":{"profile":{"givenName":${givenName},"familyName":"F"},"email":{"email":"${username}@example.com"}}}`;
    const viaRest = await fetch(`${t.url}/v2/users/new`, { method: "POST", headers: headers(), body: body("lone-rest", lone) });
    expect(viaRest.status).toBe(400);
    expect(((await viaRest.json()) as { message: string }).message).toContain("not well-formed Unicode");
    // protobuf-es refuses it in a string field while it reads the JSON.
    const viaConnect = await fetch(`${t.url}/svc.user.v2.UserService/CreateUser`, { method: "POST", headers: headers(), body: body("lone-connect", lone) });
    expect(viaConnect.status).toBe(400);
    expect(await viaConnect.json()).toMatchObject({ code: "invalid_argument", message: expect.stringContaining("invalid UTF8") });
    // Inside a google.protobuf.Struct it reads it as given: svc refuses it before the handler runs.
    const inStruct = await fetch(`${t.url}/svc.session.v2.SessionService/SetSession`, {
      method: "POST",
      headers: headers(),
      body: `{"sessionId":"s","sessionToken":"t","checks":{"webAuthN":{"credentialAssertionData":{"id":${lone},"nested":[{"k":${lone}}]}}}}`,
    });
    expect(inStruct.status).toBe(400);
    expect(await inStruct.json()).toMatchObject({
      code: "invalid_argument",
      message: "checks.webAuthN.credentialAssertionData.id holds text that is not well-formed Unicode (an unpaired UTF-16 surrogate)",
      details: [expect.objectContaining({ debug: expect.objectContaining({ reason: "Errors.Request.Unicode" }) })],
    });
    expect(await users()).toBe(before);
    // A surrogate pair is one well-formed character (U+1F600): accepted.
    const paired = await fetch(`${t.url}/svc.user.v2.UserService/CreateUser`, {
      method: "POST",
      headers: headers(),
      body: body("paired-connect", JSON.stringify("Pai\ud83d\ude00red")),
    });
    expect(paired.status).toBe(200);
  });
});

describe("a body that is not protobuf binary (issue 11, finding 12)", () => {
  // A length-delimited field whose length runs past the end: connect-es reported it as Internal.
  const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
  const frame = (msg: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, 0, msg.length]), msg]);
  const path = "/svc.user.v2.UserService/GetUserByID";

  it("Connect: 400 invalid_argument with Errors.Request.Malformed", async () => {
    const res = await fetch(`${t.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.pat}`, "content-type": "application/proto" },
      body: garbage,
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as { code: string; details: { debug: { reason: string } }[] };
    expect(body.code).toBe("invalid_argument");
    expect(body.details[0]?.debug.reason).toBe("Errors.Request.Malformed");
  });

  it("gRPC-Web: grpc-status 3", async () => {
    const res = await fetch(`${t.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.pat}`, "content-type": "application/grpc-web+proto" },
      body: frame(garbage),
    });
    expect(res.status).toBe(200);
    const trailer = Buffer.from(await res.arrayBuffer()).toString("latin1");
    expect(trailer).toMatch(/grpc-status: ?3\r\n/);
  });

  it("gRPC over h2c: grpc-status 3 (INVALID_ARGUMENT)", async () => {
    const session = http2.connect(t.url);
    try {
      const status = await new Promise<string | undefined>((resolve, reject) => {
        const req = session.request({
          ":method": "POST",
          ":path": path,
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${t.pat}`,
        });
        let s: string | undefined;
        req.on("response", (h) => {
          s ??= h["grpc-status"] as string | undefined;
        });
        req.on("trailers", (h) => {
          s = (h["grpc-status"] as string | undefined) ?? s;
        });
        req.on("data", () => {});
        req.on("end", () => resolve(s));
        req.on("error", reject);
        req.end(frame(garbage));
      });
      expect(status).toBe("3");
    } finally {
      session.close();
    }
  });
});
