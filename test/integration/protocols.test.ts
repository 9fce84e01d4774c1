// The same ListUsers answered over every protocol on one port, by clients we
// did not write (buf curl) and by connect-node's three transports.

import http2 from "node:http2";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { InstanceService } from "../../gen/svc/instance/v2/instance_service_pb.js";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { bufCurl } from "../support/buf.js";
import { type H2Answer, h2Request as h2Send } from "../support/http2.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
const auth = () => ({ authorization: `Bearer ${t.pat}` });

beforeAll(async () => {
  t = await startTestServer();
  // One more user so that the lists are not just the bootstrap accounts.
  const instance = await createClient(InstanceService, createConnectTransport({ baseUrl: t.url, httpVersion: "1.1" })).getInstance({}, { headers: auth() });
  const res = await rest(t.url, t.pat, "POST", "/v2/users/new", {
    organizationId: instance.instance?.defaultOrganizationId,
    username: "robot-1",
    machine: { name: "Robot One", description: "used by the protocol tests" },
  });
  expect(res.status).toBe(200);
});
afterAll(() => t.stop());

function h2Request(
  session: http2.ClientHttp2Session,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = auth(),
): Promise<H2Answer> {
  return h2Send(session, { ":method": method, ":path": path, ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) }, body);
}

const sortedIds = (users: { userId: string }[]) => users.map((u) => u.userId).sort();

describe("one port, every protocol", () => {
  let expected: string[];

  beforeAll(async () => {
    const res = await rest(t.url, t.pat, "POST", "/v2/users", {});
    const body = (await res.json()) as { result: { userId: string }[]; details: { totalResult: string } };
    expected = sortedIds(body.result);
    expect(expected).toHaveLength(3);
    expect(body.details.totalResult).toBe("3");
  });

  it("REST: POST /v2/users lists and GET /v2/users/{id} gets", async () => {
    const one = await rest(t.url, t.pat, "GET", `/v2/users/${expected[0]}`);
    expect(one.status).toBe(200);
    expect(((await one.json()) as { user: { userId: string } }).user.userId).toBe(expected[0]);
  });

  it("REST and the probes over HTTP/2 (h2c): the same answers, errors and limits as over HTTP/1.1", async () => {
    const session = http2.connect(t.url);
    try {
      const one = await h2Request(session, "GET", `/v2/users/${expected[0]}`);
      expect(one.status).toBe(200);
      expect(one.headers["content-type"]).toBe("application/json");
      expect((JSON.parse(one.body) as { user: { userId: string } }).user.userId).toBe(expected[0]);
      const list = await h2Request(session, "POST", "/v2/users", "{}");
      expect(list.status).toBe(200);
      expect(sortedIds((JSON.parse(list.body) as { result: { userId: string }[] }).result)).toEqual(expected);
      // A domain error keeps its REST shape.
      const missing = await h2Request(session, "GET", "/v2/users/nope");
      expect(missing.status).toBe(404);
      expect(JSON.parse(missing.body)).toMatchObject({ code: Code.NotFound });
      // No token: 401 with the challenge.
      const anonymous = await h2Request(session, "GET", `/v2/users/${expected[0]}`, undefined, {});
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers["www-authenticate"]).toMatch(/^Bearer/);
      // Over the body limit: 413 (HTTP/2 has no Connection header to send; the session stays usable).
      const big = await h2Request(session, "POST", "/v2/users", JSON.stringify({ pad: "x".repeat(4 * 1024 * 1024) }));
      expect(big.status).toBe(413);
      expect(JSON.parse(big.body)).toMatchObject({ code: Code.ResourceExhausted });
      expect((await h2Request(session, "GET", `/v2/users/${expected[0]}`)).status).toBe(200);
      // The probes too, for proxies that health-check over HTTP/2.
      expect(await h2Request(session, "GET", "/healthz", undefined, {})).toMatchObject({ status: 200, body: '{"status":"ok"}' });
      expect(await h2Request(session, "GET", "/readyz", undefined, {})).toMatchObject({ status: 200, body: '{"status":"ready"}' });
      expect(await h2Request(session, "HEAD", "/readyz", undefined, {})).toMatchObject({ status: 200, body: "" });
      const unknown = await h2Request(session, "GET", "/v2/nothing-here", undefined, {});
      expect(unknown.status).toBe(404);
      expect(JSON.parse(unknown.body)).toMatchObject({ code: Code.NotFound });
    } finally {
      session.close();
    }
  });

  it("gRPC over h2c (connect-node gRPC transport)", async () => {
    const client = createClient(UserService, createGrpcTransport({ baseUrl: t.url }));
    const res = await client.listUsers({}, { headers: auth() });
    expect(sortedIds(res.result)).toEqual(expected);
    expect(res.details?.totalResult).toBe(3n);
  });

  it("Connect JSON and binary over HTTP/1.1 and HTTP/2", async () => {
    for (const httpVersion of ["1.1", "2"] as const) {
      for (const useBinaryFormat of [false, true]) {
        const client = createClient(UserService, createConnectTransport({ baseUrl: t.url, httpVersion, useBinaryFormat }));
        const res = await client.listUsers({}, { headers: auth() });
        expect(sortedIds(res.result)).toEqual(expected);
      }
    }
  });

  it("gRPC-Web over HTTP/1.1 and HTTP/2", async () => {
    for (const httpVersion of ["1.1", "2"] as const) {
      const client = createClient(UserService, createGrpcWebTransport({ baseUrl: t.url, httpVersion }));
      expect(sortedIds((await client.listUsers({}, { headers: auth() })).result)).toEqual(expected);
    }
  });

  it("buf curl over gRPC, Connect and gRPC-Web, resolving the schema by reflection", async () => {
    for (const protocol of [
      ["--protocol", "grpc", "--http2-prior-knowledge"],
      ["--protocol", "connect"],
      ["--protocol", "grpcweb"],
    ]) {
      const out = await bufCurl([...protocol, "-H", `Authorization: Bearer ${t.pat}`, "-d", "{}", `${t.url}/svc.user.v2.UserService/ListUsers`]);
      expect(out.stderr).toBe("");
      expect(out.code).toBe(0);
      expect(sortedIds(JSON.parse(out.stdout).result)).toEqual(expected);
    }
  });

  it("buf curl with the local protos (--schema) needs no reflection", async () => {
    const out = await bufCurl([
      "--schema",
      ".",
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-H",
      `Authorization: Bearer ${t.pat}`,
      "-d",
      "{}",
      `${t.url}/svc.org.v2.OrganizationService/ListOrganizations`,
    ]);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout).result[0].name).toBe("Default");
  });

  it("plain curl-style Connect JSON POST works without the Connect headers", async () => {
    const res = await fetch(`${t.url}/svc.user.v2.UserService/ListUsers`, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(200);
    expect(sortedIds(((await res.json()) as { result: { userId: string }[] }).result)).toEqual(expected);
  });
});

describe("reflection and health", () => {
  it("lists every API service by reflection (v1 and v1alpha)", async () => {
    for (const reflect of ["grpc-v1", "grpc-v1alpha"]) {
      const out = await bufCurl(["--protocol", "grpc", "--http2-prior-knowledge", "--reflect-protocol", reflect, "--list-methods", t.url]);
      expect(out.code).toBe(0);
      for (const m of [
        "svc.user.v2.UserService/ListUsers",
        "svc.org.v2.OrganizationService/GetOrganizationByID",
        "svc.instance.v2.InstanceService/GetInstance",
        "svc.settings.v2.SettingsService/GetPasswordComplexitySettings",
      ]) {
        expect(out.stdout).toContain(m);
      }
    }
  });

  it("answers grpc.health.v1.Health/Check without a token", async () => {
    const out = await bufCurl([
      "--protocol",
      "grpc",
      "--http2-prior-knowledge",
      "-d",
      '{"service":"svc.user.v2.UserService"}',
      `${t.url}/grpc.health.v1.Health/Check`,
    ]);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({ status: "SERVING" });
  });

  it("answers /healthz and /readyz (GET and HEAD, never cached)", async () => {
    const h = await fetch(`${t.url}/healthz`);
    expect(h.status).toBe(200);
    expect(h.headers.get("cache-control")).toBe("no-store");
    expect(await h.json()).toEqual({ status: "ok" });
    const head = await fetch(`${t.url}/readyz`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    expect((await fetch(`${t.url}/healthz`, { method: "POST" })).status).toBe(404);
    const r = await fetch(`${t.url}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: "ready" });
  });

  it("returns a request id and honours the caller's", async () => {
    const res = await fetch(`${t.url}/healthz`, { headers: { "x-request-id": "abc-123" } });
    expect(res.headers.get("x-request-id")).toBe("abc-123");
    const fresh = await fetch(`${t.url}/healthz`, { headers: { "x-request-id": "bad id with spaces" } });
    expect(fresh.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("organizations and instance over gRPC", () => {
  it("gets the default organization by id and refuses an unknown one with NotFound", async () => {
    const grpc = createGrpcTransport({ baseUrl: t.url });
    const orgs = createClient(OrganizationService, grpc);
    const instance = await createClient(InstanceService, grpc).getInstance({}, { headers: auth() });
    const org = await orgs.getOrganizationByID({ organizationId: instance.instance?.defaultOrganizationId ?? "" }, { headers: auth() });
    expect(org.organization?.name).toBe("Default");
    const err = await orgs.getOrganizationByID({ organizationId: "nope" }, { headers: auth() }).catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });
});
