// The OAuth/OIDC endpoints' HTTP handling (they are served without Express):
// methods, HEAD, HTTP/2 and the form limits.
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
const json = async (r: Response) => (await r.json()) as Record<string, unknown>;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.stop());

function h2(url: string, headers: http2.OutgoingHttpHeaders, body?: string): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }> {
  const session = http2.connect(url);
  return new Promise((resolve, reject) => {
    const req = session.request(headers);
    let status = 0;
    let head: http2.IncomingHttpHeaders = {};
    let text = "";
    req.on("response", (h) => {
      status = Number(h[":status"]);
      head = h;
    });
    req.setEncoding("utf8");
    req.on("data", (c: string) => {
      text += c;
    });
    req.on("end", () => {
      session.close();
      resolve({ status, headers: head, body: text });
    });
    req.on("error", (err) => {
      session.close();
      reject(err);
    });
    req.end(body);
  });
}

describe("OAuth endpoints over HTTP", () => {
  it("a wrong method is 405 with Allow", async () => {
    const r = await fetch(`${t.url}/oauth/v2/token`);
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe("POST");
    expect((await json(r)).error).toBe("invalid_request");
    const u = await fetch(`${t.url}/oidc/v1/userinfo`, { method: "PUT" });
    expect(u.status).toBe(405);
    expect(u.headers.get("allow")).toBe("GET, POST");
  });

  it("HEAD of discovery and JWKS: headers, no body", async () => {
    for (const path of ["/.well-known/openid-configuration", "/oauth/v2/keys"]) {
      const r = await fetch(`${t.url}${path}`, { method: "HEAD" });
      expect(r.status).toBe(200);
      expect(r.headers.get("cache-control")).toMatch(/max-age=300/);
      expect(Number(r.headers.get("content-length"))).toBeGreaterThan(50);
      expect(await r.text()).toBe("");
    }
  });

  it("answers over HTTP/2 (h2c): discovery and a token request's errors", async () => {
    const d = await h2(t.url, { ":method": "GET", ":path": "/.well-known/openid-configuration" });
    expect(d.status).toBe(200);
    expect(JSON.parse(d.body).token_endpoint).toMatch(/\/oauth\/v2\/token$/);
    const bad = await h2(
      t.url,
      { ":method": "POST", ":path": "/oauth/v2/token", "content-type": "application/x-www-form-urlencoded", authorization: "Basic bm9ib2R5Om5vdGhpbmc=" },
      "grant_type=client_credentials",
    );
    expect(bad.status).toBe(401);
    expect(bad.headers["www-authenticate"]).toBe('Basic realm="svc"');
    expect(bad.headers["cache-control"]).toBe("no-store");
    expect(JSON.parse(bad.body).error).toBe("invalid_client");
  });

  it("refuses forms that are too large or have too many parameters, and keeps the connection usable", async () => {
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const many = Array.from({ length: 51 }, (_, i) => `p${i}=1`).join("&");
    const r1 = await fetch(`${t.url}/oauth/v2/token`, { method: "POST", headers: form, body: many });
    expect({ status: r1.status, error: (await json(r1)).error }).toEqual({ status: 400, error: "invalid_request" });
    const r2 = await fetch(`${t.url}/oauth/v2/token`, { method: "POST", headers: form, body: `grant_type=${"x".repeat(70_000)}` });
    expect({ status: r2.status, error: (await json(r2)).error }).toEqual({ status: 400, error: "invalid_request" });
    const r3 = await fetch(`${t.url}/oauth/v2/token`, { method: "POST", headers: form, body: "grant_type=a&grant_type=b" });
    expect(await json(r3)).toEqual({ error: "invalid_request", error_description: "parameter grant_type is repeated" });
    const r4 = await fetch(`${t.url}/oauth/v2/token`, { method: "POST", headers: form, body: "grant_type=password" });
    expect((await json(r4)).error).toBe("unsupported_grant_type");
  });
});
