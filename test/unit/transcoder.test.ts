import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { create, type DescMethodUnary, type JsonObject, toJson } from "@bufbuild/protobuf";
import { timestampFromDate, timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter, createConnectRouter, type Interceptor } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { SettingsService } from "../../gen/svc/settings/v2/settings_service_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { createRestTranscoder, matchPath, parsePathTemplate } from "../../src/http/transcoder.js";
import { EchoResponseSchema, FixtureService, fixtureServiceWith, type RuleInit, ScalarsSchema } from "./transcoder-fixtures/fixture-service.js";

// ---------------------------------------------------------------------------
// Pure: path templates (vectors from the comments of google/api/http.proto)
// ---------------------------------------------------------------------------

describe("parsePathTemplate", () => {
  it("parses a variable with a sub-template", () => {
    const t = parsePathTemplate("/v1/{name=messages/*}");
    expect(t.segments).toEqual([{ kind: "literal", value: "v1" }, { kind: "literal", value: "messages" }, { kind: "wildcard" }]);
    expect(t.variables).toEqual([{ fieldPath: "name", start: 1, end: 3, multiSegment: true }]);
    expect(t.verb).toBeUndefined();
  });

  it("treats {var} as {var=*}, a single-segment variable", () => {
    const t = parsePathTemplate("/v1/users/{user_id}/messages/{message_id}");
    expect(t.variables).toEqual([
      { fieldPath: "user_id", start: 2, end: 3, multiSegment: false },
      { fieldPath: "message_id", start: 4, end: 5, multiSegment: false },
    ]);
    expect(parsePathTemplate("/v1/{id=*}").variables[0]?.multiSegment).toBe(false);
  });

  it("parses ** inside a variable, nested field paths and verbs", () => {
    const books = parsePathTemplate("/v1/{name=shelves/*/books/**}");
    expect(books.segments.at(-1)).toEqual({ kind: "deepWildcard" });
    expect(books.variables[0]).toMatchObject({ fieldPath: "name", multiSegment: true });
    expect(parsePathTemplate("/v1/messages/{message_id}/{sub.subfield}").variables[1]?.fieldPath).toBe("sub.subfield");
    expect(parsePathTemplate("/v1/{name=projects/*}:undelete").verb).toBe("undelete");
    const literalVerb = parsePathTemplate("/v1/things:batchGet");
    expect(literalVerb.verb).toBe("batchGet");
    expect(literalVerb.segments).toEqual([
      { kind: "literal", value: "v1" },
      { kind: "literal", value: "things" },
    ]);
  });

  it.each([
    ["v1/x", "must start"],
    ["/v1/{a", "unbalanced"],
    ["/v1/{a={b}}", "nested"],
    ["/v1/**/x", "last segment"],
    ["/v1/{a=**}/x", "last segment"],
    ["/v1/{a}/{a}", "bound twice"],
    ["/v1/{a=}", "invalid segment"],
    ["/v1/{1a}", "invalid field path"],
    ["/v1//x", "invalid segment"],
    ["/v1/x:", "invalid verb"],
    ["/v1/{a}b", "text after variable"],
  ])("rejects %s", (template, why) => {
    expect(() => parsePathTemplate(template)).toThrow(why);
  });
});

describe("matchPath", () => {
  const match = (template: string, path: string) => matchPath(parsePathTemplate(template), path);

  it("binds the examples of http.proto", () => {
    expect(match("/v1/{name=messages/*}", "/v1/messages/123456")).toEqual({ name: "messages/123456" });
    expect(match("/v1/messages/{message_id}", "/v1/messages/123456")).toEqual({ message_id: "123456" });
    expect(match("/v1/users/{user_id}/messages/{message_id}", "/v1/users/me/messages/123456")).toEqual({
      user_id: "me",
      message_id: "123456",
    });
    expect(match("/v1/messages/{message_id}/{sub.subfield}", "/v1/messages/1/foo")).toEqual({
      message_id: "1",
      "sub.subfield": "foo",
    });
  });

  it("matches segment counts and literals exactly", () => {
    expect(match("/v1/{name=messages/*}", "/v1/messages")).toBeUndefined();
    expect(match("/v1/{name=messages/*}", "/v1/messages/1/2")).toBeUndefined();
    expect(match("/v1/{name=messages/*}", "/v1/other/1")).toBeUndefined();
    expect(match("/v1/messages/{id}", "/v1/messages/")).toBeUndefined();
    expect(match("/v1/messages/{id}", "/v1/Messages/1")).toBeUndefined();
    expect(match("/v1/*/x", "/v1/a/x")).toEqual({});
    expect(match("/v1/things/", "/v1/things/")).toEqual({});
    expect(match("/v1/things/", "/v1/things")).toBeUndefined();
    expect(match("/v1/things", "/v1/things/")).toBeUndefined();
  });

  it("lets ** take zero or more segments", () => {
    const t = "/v1/{name=shelves/*/books/**}";
    expect(match(t, "/v1/shelves/s1/books/a/b/c")).toEqual({ name: "shelves/s1/books/a/b/c" });
    expect(match(t, "/v1/shelves/s1/books")).toEqual({ name: "shelves/s1/books" });
    expect(match(t, "/v1/shelves/books")).toBeUndefined();
  });

  it("fully decodes single-segment variables, keeping + literal", () => {
    expect(match("/v1/messages/{id}", "/v1/messages/a%2Fb%20c")).toEqual({ id: "a/b c" });
    expect(match("/v1/messages/{id}", "/v1/messages/a+b")).toEqual({ id: "a+b" });
    expect(match("/v1/messages/{id}", "/v1/messages/%C3%A9")).toEqual({ id: "é" });
  });

  it("leaves %2F encoded in multi-segment variables", () => {
    expect(match("/v1/{name=shelves/*/books/**}", "/v1/shelves/s%201/books/a/b%2fc%2Fd")).toEqual({
      name: "shelves/s 1/books/a/b%2fc%2Fd",
    });
  });

  it("compares literals after percent-decoding", () => {
    expect(match("/v1/messages/{id}", "/v1/%6Dessages/1")).toEqual({ id: "1" });
  });

  it("rejects malformed percent-encoding as a non-match", () => {
    expect(match("/v1/messages/{id}", "/v1/messages/%zz")).toBeUndefined();
    expect(match("/v1/{name=a/**}", "/v1/a/%E0%A4")).toBeUndefined();
  });

  it("requires the verb when the template has one, and only then splits on ':'", () => {
    const t = "/v1/{name=projects/*}:undelete";
    expect(match(t, "/v1/projects/p1:undelete")).toEqual({ name: "projects/p1" });
    expect(match(t, "/v1/projects/p1")).toBeUndefined();
    expect(match(t, "/v1/projects/p1:delete")).toBeUndefined();
    expect(match("/v1/things:batchGet", "/v1/things:batchGet")).toEqual({});
    expect(match("/v1/messages/{id}", "/v1/messages/a:b")).toEqual({ id: "a:b" });
    expect(match("/v1/things/{id}:cancel", "/v1/things/a:b:cancel")).toEqual({ id: "a:b" });
  });
});

// ---------------------------------------------------------------------------
// End to end through a Node HTTP server and the Connect router
// ---------------------------------------------------------------------------

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

async function startApp(router: ConnectRouter, options?: { maxBodyBytes?: number }) {
  const rest = createRestTranscoder(router, options);
  const server: Server = await new Promise((resolve) => {
    const s = createServer((req, res) => {
      if (rest(req, res)) return;
      res.writeHead(404).end();
    }).listen(0, "127.0.0.1", () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const call = async (method: string, path: string, init: { body?: string | Uint8Array; headers?: Record<string, string> } = {}) => {
    const headers = { ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers };
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, body: init.body, headers });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json } satisfies Reply;
  };
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return { call, close };
}

type App = Awaited<ReturnType<typeof startApp>>;

/** The grpc-gateway style error body. */
function expectError(reply: Reply, status: number, code: Code, message?: string | RegExp) {
  expect({ status: reply.status, code: (reply.json as JsonObject | undefined)?.code }).toEqual({ status, code });
  expect(reply.headers.get("content-type")).toBe("application/json");
  const body = reply.json as { message: string; details: unknown[] };
  expect(Array.isArray(body.details)).toBe(true);
  if (typeof message === "string") expect(body.message).toBe(message);
  if (message instanceof RegExp) expect(body.message).toMatch(message);
}

describe("REST transcoder on UserService", () => {
  const requests: { method: string; json: unknown }[] = [];
  const interceptedMethods: string[] = [];
  let app: App;

  // Stands in for the real authentication interceptor.
  const auth: Interceptor = (next) => async (req) => {
    interceptedMethods.push(req.method.name);
    if (req.header.get("authorization") === "Bearer bad") {
      throw new ConnectError("invalid token", Code.Unauthenticated, {
        "www-authenticate": 'Bearer error="invalid_token"',
      });
    }
    return next(req);
  };

  beforeAll(async () => {
    const router = createConnectRouter({ jsonOptions: { ignoreUnknownFields: false }, interceptors: [auth] });
    router.service(UserService, {
      getUserByID(req, ctx) {
        requests.push({ method: "GetUserByID", json: req.userId });
        if (req.userId === "missing") throw new ConnectError("nope", Code.NotFound);
        if (req.userId === "locked") {
          throw new ConnectError("user is locked", Code.FailedPrecondition, undefined, [
            { desc: ErrorInfoSchema, value: { reason: "USER_LOCKED", domain: "svc", metadata: { userId: "locked" } } },
          ]);
        }
        ctx.responseHeader.set("x-request-id", ctx.requestHeader.get("x-request-id") ?? "none");
        ctx.responseHeader.set("x-internal", "not forwarded");
        return {
          user: {
            userId: req.userId,
            username: `user-${req.userId}`,
            preferredLoginName: ctx.requestHeader.get("authorization") ?? "",
            loginNames: [ctx.requestHeader.get("x-forwarded-for") ?? "", ctx.requestHeader.get("cookie") ?? "no cookie"],
          },
        };
      },
      listUsers(req) {
        requests.push({ method: "ListUsers", json: req.query?.limit ?? null });
        const limit = req.query?.limit ?? 0;
        return {
          details: { totalResult: 1000n },
          sortingColumn: req.sortingColumn,
          result: Array.from({ length: limit }, (_, i) => ({ userId: `u${i}` })),
        };
      },
      deleteUser(req) {
        requests.push({ method: "DeleteUser", json: req.userId });
        return { deletionDate: timestampFromDate(new Date("2026-01-02T03:04:05Z")) };
      },
      addPersonalAccessToken(req) {
        requests.push({ method: "AddPersonalAccessToken", json: req.userId });
        return { id: `pat-${req.userId}`, token: "secret", creationDate: timestampNow(), expirationDate: req.expirationDate };
      },
      removePersonalAccessToken(req) {
        requests.push({ method: "RemovePersonalAccessToken", json: { userId: req.userId, tokenId: req.tokenId } });
        return {};
      },
    });
    router.service(SettingsService, {
      getPasswordComplexitySettings(req) {
        // ORG when asked for an organization, so the test sees the query parameter arrive.
        return { settings: { minLength: 8n, resourceOwnerType: req.organizationId === "o1" ? 2 : 1 } };
      },
    });
    app = await startApp(router);
  });

  afterAll(async () => app.close());

  it("GET binds the path variable to user_id and forwards the request headers that matter", async () => {
    const reply = await app.call("GET", "/v2/users/u1", {
      headers: { authorization: "Bearer good", "x-request-id": "req-1", "x-forwarded-for": "10.0.0.1", cookie: "a=b" },
    });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toBe("application/json");
    expect(reply.json).toEqual({
      user: { userId: "u1", username: "user-u1", preferredLoginName: "Bearer good", loginNames: ["10.0.0.1", "no cookie"] },
    });
    expect(reply.headers.get("x-request-id")).toBe("req-1");
    expect(reply.headers.get("x-internal")).toBeNull();
  });

  it("runs the router's interceptors for REST calls", async () => {
    interceptedMethods.length = 0;
    await app.call("DELETE", "/v2/users/u9");
    expect(interceptedMethods).toEqual(["DeleteUser"]);
    const reply = await app.call("GET", "/v2/users/u1", { headers: { authorization: "Bearer bad" } });
    expectError(reply, 401, Code.Unauthenticated, "invalid token");
    expect(reply.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
  });

  it("percent-decodes the path variable", async () => {
    const reply = await app.call("GET", "/v2/users/a%2Fb%20c");
    expect((reply.json as { user: { userId: string } }).user.userId).toBe("a/b c");
  });

  it("POST with body:* sends the whole body as the request", async () => {
    const reply = await app.call("POST", "/v2/users", {
      body: JSON.stringify({ query: { limit: 2, asc: true }, sortingColumn: "USER_FIELD_NAME_EMAIL" }),
    });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({
      details: { totalResult: "1000" },
      sortingColumn: "USER_FIELD_NAME_EMAIL",
      result: [{ userId: "u0" }, { userId: "u1" }],
    });
  });

  it("accepts proto field names in the body, like the Connect JSON parser", async () => {
    const reply = await app.call("POST", "/v2/users", { body: JSON.stringify({ query: { limit: 1 }, sorting_column: 1 }) });
    expect(reply.status).toBe(200);
    expect((reply.json as { sortingColumn: string }).sortingColumn).toBe("USER_FIELD_NAME_USER_NAME");
  });

  it("treats an empty body for body:* as {}", async () => {
    const reply = await app.call("POST", "/v2/users", { headers: { "content-type": "text/plain" } });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ details: { totalResult: "1000" } });
  });

  it("DELETE binds two path variables", async () => {
    const reply = await app.call("DELETE", "/v2/users/u1/pats/t1");
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({});
    expect(requests.at(-1)).toEqual({ method: "RemovePersonalAccessToken", json: { userId: "u1", tokenId: "t1" } });
  });

  it("DELETE /v2/users/{id} returns the response JSON", async () => {
    const reply = await app.call("DELETE", "/v2/users/u1");
    expect(reply.json).toEqual({ deletionDate: "2026-01-02T03:04:05Z" });
  });

  it("POST body:* merges the path variable into the body", async () => {
    const reply = await app.call("POST", "/v2/users/u1/pats", { body: '{"expirationDate":"2030-01-01T00:00:00Z"}' });
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ id: "pat-u1", token: "secret", expirationDate: "2030-01-01T00:00:00Z" });
  });

  it("accepts a body that repeats the path value, rejects one that contradicts it", async () => {
    const same = await app.call("POST", "/v2/users/u1/pats", { body: '{"user_id":"u1"}' });
    expect(same.status).toBe(200);
    const other = await app.call("POST", "/v2/users/u1/pats", { body: '{"userId":"u2"}' });
    expectError(other, 400, Code.InvalidArgument, /path variable "user_id" conflicts/);
  });

  it("prefers the literal /v2/users/pats/search over /v2/users/{user_id}/pats", async () => {
    // ListPersonalAccessTokens is not implemented: Connect answers unimplemented.
    const reply = await app.call("POST", "/v2/users/pats/search", { body: "{}" });
    expectError(reply, 501, Code.Unimplemented);
  });

  it("maps a Connect error to its HTTP status and the grpc-gateway body", async () => {
    const reply = await app.call("GET", "/v2/users/missing");
    expectError(reply, 404, Code.NotFound);
    expect(reply.json).toEqual({ code: 5, message: "nope", details: [] });
  });

  it("decodes ErrorInfo details into Any JSON", async () => {
    const reply = await app.call("GET", "/v2/users/locked");
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({
      code: Code.FailedPrecondition,
      message: "user is locked",
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.ErrorInfo",
          reason: "USER_LOCKED",
          domain: "svc",
          metadata: { userId: "locked" },
        },
      ],
    });
  });

  it("answers 400 for malformed JSON", async () => {
    const reply = await app.call("POST", "/v2/users", { body: '{"query":' });
    expectError(reply, 400, Code.InvalidArgument, /^invalid JSON body: /);
    const notUtf8 = await app.call("POST", "/v2/users", { body: new Uint8Array([0x7b, 0xff, 0x7d]) });
    expectError(notUtf8, 400, Code.InvalidArgument, "invalid JSON body: not valid UTF-8");
  });

  it("answers 400 for a body that is not a JSON object", async () => {
    expectError(await app.call("POST", "/v2/users", { body: "[1]" }), 400, Code.InvalidArgument, /JSON object/);
  });

  it("answers 400 for unknown fields (the Connect handler parses strictly)", async () => {
    const reply = await app.call("POST", "/v2/users", { body: '{"query":{"limit":1},"nope":true}' });
    expectError(reply, 400, Code.InvalidArgument, /nope/);
  });

  it("answers 400 for a value of the wrong JSON type", async () => {
    const reply = await app.call("POST", "/v2/users", { body: '{"query":{"limit":"many"}}' });
    expectError(reply, 400, Code.InvalidArgument);
  });

  it("answers 400 for a content type other than application/json", async () => {
    const reply = await app.call("POST", "/v2/users", { body: "{}", headers: { "content-type": "text/plain" } });
    expectError(reply, 400, Code.InvalidArgument, /unsupported content type "text\/plain"/);
    const latin1 = await app.call("POST", "/v2/users", {
      body: "{}",
      headers: { "content-type": "application/json; charset=iso-8859-1" },
    });
    expectError(latin1, 400, Code.InvalidArgument, /unsupported content type/);
    const utf8 = await app.call("POST", "/v2/users", {
      body: "{}",
      headers: { "content-type": "Application/JSON; charset=UTF-8" },
    });
    expect(utf8.status).toBe(200);
  });

  it("answers 400 for a body on a rule without body", async () => {
    expectError(await app.call("DELETE", "/v2/users/u1", { body: "{}" }), 400, Code.InvalidArgument, /no request body/);
  });

  it("maps query parameters by proto or JSON name", async () => {
    const expected = { settings: { minLength: "8", resourceOwnerType: "RESOURCE_OWNER_TYPE_ORG" } };
    expect((await app.call("GET", "/v2/settings/password/complexity?organizationId=o1")).json).toEqual(expected);
    expect((await app.call("GET", "/v2/settings/password/complexity?organization_id=o1")).json).toEqual(expected);
    const instance = await app.call("GET", "/v2/settings/password/complexity");
    expect(instance.json).toEqual({ settings: { minLength: "8", resourceOwnerType: "RESOURCE_OWNER_TYPE_INSTANCE" } });
  });

  it("answers 400 for unknown query parameters and for fields the path sets", async () => {
    expectError(await app.call("GET", "/v2/settings/password/complexity?org=o1"), 400, Code.InvalidArgument, /unknown query parameter "org"/);
    expectError(await app.call("GET", "/v2/users/u1?userId=u2"), 400, Code.InvalidArgument, /set by the URL path/);
    expectError(await app.call("POST", "/v2/users?query.limit=3", { body: "{}" }), 400, Code.InvalidArgument, /in the body/);
  });

  it("falls through to the next handler for unknown paths and methods", async () => {
    for (const [method, path] of [
      ["GET", "/v2/nothing"],
      ["GET", "/v2/users/u1/"],
      ["PUT", "/v2/users/u1"],
      ["GET", "/v2/users"],
      ["GET", "/v2/users/%zz"],
    ]) {
      const reply = await app.call(method, path);
      expect({ method, path, status: reply.status, json: reply.json }).toEqual({ method, path, status: 404, json: undefined });
    }
  });
});

describe("REST transcoder body limit", () => {
  let app: App;
  beforeAll(async () => {
    const router = createConnectRouter({ jsonOptions: { ignoreUnknownFields: false } });
    router.service(UserService, { listUsers: () => ({}) });
    app = await startApp(router, { maxBodyBytes: 32 });
  });
  afterAll(async () => app.close());

  it("answers 413 RESOURCE_EXHAUSTED above maxBodyBytes", async () => {
    const big = JSON.stringify({ queries: Array.from({ length: 10 }, () => ({})) });
    expectError(await app.call("POST", "/v2/users", { body: big }), 413, Code.ResourceExhausted, /exceeds 32 bytes/);
    expect((await app.call("POST", "/v2/users", { body: "{}" })).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------
// End to end on the fixture service: types, body mappings, verbs, custom
// ---------------------------------------------------------------------------

describe("REST transcoder mapping rules", () => {
  let app: App;
  beforeAll(async () => {
    const router = createConnectRouter({ jsonOptions: { ignoreUnknownFields: false } });
    for (const method of FixtureService.methods) {
      // Every fixture rpc is unary; the runtime-built descriptor just is not typed that way.
      router.rpc(method as DescMethodUnary, (req) => {
        const echo = toJson(ScalarsSchema, req) as JsonObject;
        const note = echo.name === "things/quiet" ? "" : `${method.name} ${String(echo.name ?? "")}`;
        return create(EchoResponseSchema, { echo: req, note });
      });
    }
    app = await startApp(router);
  });
  afterAll(async () => app.close());

  const echoOf = (reply: Reply) => {
    expect(reply.status).toBe(200);
    return (reply.json as { echo: JsonObject }).echo;
  };
  const noteOf = (reply: Reply) => (reply.json as { note: string }).note;

  it("GET /v1/{name=messages/*} binds the multi-segment value", async () => {
    const reply = await app.call("GET", "/v1/messages/123456");
    expect(noteOf(reply)).toBe("GetMessage messages/123456");
  });

  it("serves additional_bindings, with nested field paths", async () => {
    const reply = await app.call("GET", "/v1/users/me/messages/123456");
    expect(echoOf(reply)).toEqual({ parentName: "me", inner: { innerName: "123456" } });
  });

  it("converts query parameters by field type (http.proto: revision=2&sub.subfield=foo)", async () => {
    const query = [
      "name=n",
      "flag=true",
      "i32=-5",
      "i64=-9007199254740993",
      "u32=4294967295",
      "u64=18446744073709551615",
      "s32=-1",
      "f64=5",
      "f=1.5",
      "d=-2.5e3",
      "color=COLOR_RED",
      "data=AQID",
      "at=2030-01-01T00:00:00Z",
      "ttl=1.5s",
      "wrapped=7",
      "mask=a.b,c",
      "tags=a",
      "tags=b%20c",
      "colors=COLOR_BLUE",
      "colors=1",
      "inner.inner_name=x",
      "inner.child.depth=3",
      "parentName=p",
    ].join("&");
    expect(echoOf(await app.call("GET", `/v1/search?${query}`))).toEqual({
      name: "n",
      flag: true,
      i32: -5,
      i64: "-9007199254740993",
      u32: 4294967295,
      u64: "18446744073709551615",
      s32: -1,
      f64: "5",
      f: 1.5,
      d: -2500,
      color: "COLOR_RED",
      data: "AQID",
      at: "2030-01-01T00:00:00Z",
      ttl: "1.500s",
      wrapped: 7,
      mask: "a.b,c",
      tags: ["a", "b c"],
      colors: ["COLOR_BLUE", "COLOR_RED"],
      inner: { innerName: "x", child: { depth: 3 } },
      parentName: "p",
    });
  });

  it("accepts base64url bytes, enum numbers, NaN and JSON names in nested paths", async () => {
    const echo = echoOf(await app.call("GET", "/v1/search?data=-_8&color=2&d=NaN&inner.innerName=y&flag=false"));
    expect(echo).toEqual({ data: "+/8=", color: "COLOR_BLUE", d: "NaN", inner: { innerName: "y" } });
  });

  it.each([
    ["i32=abc", /invalid value "abc" for query parameter "i32": expected int32/],
    ["i32=2147483648", /expected int32/],
    ["i32=1.0", /expected int32/],
    ["u32=-1", /expected uint32/],
    ["i64=9223372036854775808", /expected int64/],
    ["flag=yes", /expected bool/],
    ["f=1e39", /expected float/],
    ["d=0x10", /expected double/],
    ["color=PURPLE", /expected transcoder.fixture.v1.Color/],
    ["data=!!", /expected bytes/],
    ["at=yesterday", /expected google.protobuf.Timestamp/],
    ["ttl=5", /expected google.protobuf.Duration/],
    ["wrapped=x", /expected google.protobuf.Int32Value/],
    ["inner=x", /it is a message; set its fields as inner.<field>/],
    ["inners.inner_name=x", /has no sub-fields/],
    ["labels=x", /map fields/],
    ["name=a&name=b", /given 2 times but is not repeated/],
    ["name=a&name=", /given 2 times/],
    ["at.seconds=1", /has no sub-fields/],
    ["nope=1", /unknown query parameter "nope"/],
    ["inner.nope=1", /Inner has no field "nope"/],
  ])("answers 400 for ?%s", async (query, message) => {
    expectError(await app.call("GET", `/v1/search?${query}`), 400, Code.InvalidArgument, message);
  });

  it("converts typed path variables and rejects bad ones", async () => {
    expect(echoOf(await app.call("DELETE", "/v1/numbered/-7/COLOR_BLUE"))).toEqual({ i64: "-7", color: "COLOR_BLUE" });
    expectError(await app.call("DELETE", "/v1/numbered/x/COLOR_BLUE"), 400, Code.InvalidArgument, /path variable "i64"/);
    expectError(await app.call("DELETE", "/v1/numbered/1/GREEN"), 400, Code.InvalidArgument, /path variable "color"/);
  });

  it("prefers a literal segment over a variable", async () => {
    expect(noteOf(await app.call("GET", "/v1/things/special"))).toBe("GetSpecialThing ");
    expect(noteOf(await app.call("GET", "/v1/things/other"))).toBe("GetThing other");
  });

  it("body:field puts the body into that field, the rest from path and query; response_body picks a field", async () => {
    const reply = await app.call("PATCH", "/v1/things/t1?flag=true&tags=a", { body: '{"innerName":"x","depth":2}' });
    expect(reply.status).toBe(200);
    // response_body: "echo" -> the echo message itself is the response.
    expect(reply.json).toEqual({ name: "t1", flag: true, tags: ["a"], inner: { innerName: "x", depth: 2 } });
  });

  it("body:field rejects query parameters inside the body field and unknown body fields", async () => {
    const inBody = await app.call("PATCH", "/v1/things/t1?inner.depth=1", { body: "{}" });
    expectError(inBody, 400, Code.InvalidArgument, /set by the request body/);
    const unknown = await app.call("PATCH", "/v1/things/t1", { body: '{"name":"x"}' });
    expectError(unknown, 400, Code.InvalidArgument);
  });

  it("body:field with an empty body leaves the field unset", async () => {
    expect((await app.call("PATCH", "/v1/things/t1")).json).toEqual({ name: "t1" });
  });

  it("merges a path variable that points into the body field", async () => {
    const merged = await app.call("PATCH", "/v1/named/n1", { body: '{"depth":4}' });
    expect(echoOf(merged)).toEqual({ inner: { innerName: "n1", depth: 4 } });
    const conflict = await app.call("PATCH", "/v1/named/n1", { body: '{"inner_name":"n2"}' });
    expectError(conflict, 400, Code.InvalidArgument, /conflicts/);
    const notObject = await app.call("PATCH", "/v1/named/n1", { body: "[]" });
    expectError(notObject, 400, Code.InvalidArgument, /must be a JSON object/);
  });

  it("body:* takes everything not bound by the path and allows no query parameters", async () => {
    const reply = await app.call("PUT", "/v1/things/t1", { body: '{"flag":true,"inner":{"depth":1}}' });
    expect(echoOf(reply)).toEqual({ name: "t1", flag: true, inner: { depth: 1 } });
    const query = await app.call("PUT", "/v1/things/t1?flag=true", { body: "{}" });
    expectError(query, 400, Code.InvalidArgument, /takes all fields in the body/);
  });

  it("matches verbs and returns a scalar response_body, its default when unset", async () => {
    const reply = await app.call("POST", "/v1/things/t1:cancel");
    expect(reply.json).toBe("CancelThing things/t1");
    expect((await app.call("POST", "/v1/things/quiet:cancel")).text).toBe('""');
    expect((await app.call("POST", "/v1/things/t1")).status).toBe(404);
  });

  it("keeps %2F encoded in ** variables", async () => {
    const reply = await app.call("GET", "/v1/shelves/s1/books/a/b%2Fc");
    expect(noteOf(reply)).toBe("GetBook shelves/s1/books/a/b%2Fc");
  });

  it("serves custom methods", async () => {
    expect(noteOf(await app.call("PURGE", "/v1/cache/c1"))).toBe("PurgeCache c1");
    expect((await app.call("GET", "/v1/cache/c1")).status).toBe(404);
  });
});

describe("createRestTranscoder", () => {
  it("picks up services registered after it was created", async () => {
    const router = createConnectRouter();
    const app = await startApp(router);
    try {
      expect((await app.call("DELETE", "/v2/users/u1")).status).toBe(404);
      router.service(UserService, { deleteUser: () => ({}) });
      expect((await app.call("DELETE", "/v2/users/u1")).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  const get = (path: string): RuleInit => ({ pattern: { case: "get", value: path } });
  it.each<[RuleInit, RegExp]>([
    [get("/v1/{nope}"), /Fixture.Broken: path variable "nope": transcoder.fixture.v1.Scalars has no field "nope"/],
    [get("/v1/{inner}"), /path variable "inner" must be a singular primitive field/],
    [get("/v1/{tags}"), /path variable "tags" must be a singular primitive field/],
    [get("/v1/{a"), /Fixture.Broken: invalid path template "\/v1\/{a"/],
    [{ ...get("/v1/x"), body: "nope" }, /body "nope" is not a field/],
    [{ ...get("/v1/x"), responseBody: "nope" }, /response_body "nope" is not a field/],
    [{}, /no HTTP method and path/],
  ])("fails at creation for a broken rule %j", (rule, message) => {
    const router = createConnectRouter();
    for (const m of fixtureServiceWith({ Broken: rule }).methods) router.rpc(m as DescMethodUnary, () => ({}));
    expect(() => createRestTranscoder(router)).toThrow(message);
  });
});
