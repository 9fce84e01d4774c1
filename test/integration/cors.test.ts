// CORS: browser applications on other origins call svc with the headers Connect, gRPC-Web and REST need, only from
// the origins the security settings allow (the instance's and the organizations'), the OAuth endpoints also from the
// origins of OIDC applications' redirect URIs, discovery and JWKS from anywhere; never `*` for what needs a token,
// and nothing for browser navigations. Checked with fetch, and in Chromium with connect-web from another origin
// (Connect JSON, Connect binary and gRPC-Web), allowed and refused.
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { build } from "esbuild";
import type { Browser } from "playwright-core";
import { browserAvailable, launchBrowser, newContext, startBrowserServer } from "../support/browser.js";
import { createOrg, defaultOrgId, project } from "../support/fixtures.js";
import { oidcApp } from "../support/oidc.js";
import { admin } from "../support/rpc.js";
import { ROOT, type TestServer } from "../support/server.js";

const APP = "https://app.example.com";
const ORG_APP = "https://org-app.example.com";
const SPA = "https://spa.example.com";
const EVIL = "https://evil.example.com";

let t: TestServer;
let pageServer: http.Server;
let allowedPage: string;
let refusedPage: string;

/** A server of a browser application: an HTML page with the connect-web bundle, on its own origin. */
async function startPages(): Promise<{ server: http.Server; port: number }> {
  const bundle = await build({
    entryPoints: [path.join(ROOT, "test/fixtures/cors/client.ts")],
    bundle: true,
    format: "iife",
    platform: "browser",
    write: false,
    logLevel: "silent",
  });
  const js = bundle.outputFiles[0]?.text ?? "";
  const server = http.createServer((req, res) => {
    if (req.url === "/client.js") {
      res.writeHead(200, { "content-type": "text/javascript" });
      res.end(js);
      return;
    }
    res.writeHead(200, { "content-type": "text/html" });
    res.end('<!doctype html><title>app</title><script src="/client.js"></script>');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

beforeAll(async () => {
  const pages = await startPages();
  pageServer = pages.server;
  allowedPage = `http://127.0.0.1:${pages.port}`;
  // The same page server under another name: another origin, which nothing allows.
  refusedPage = `http://localhost:${pages.port}`;
  t = await startBrowserServer();
  const orgId = await defaultOrgId(t);
  // Before the first cross-origin request: svc reads the allowed origins at most every 5 s.
  await admin(t, "SetSecuritySettings", { settings: { allowedCorsOrigins: [APP, allowedPage] } });
  const other = await createOrg(t, "CORS Org");
  await admin(t, "SetSecuritySettings", { organizationId: other, settings: { allowedCorsOrigins: [ORG_APP] } });
  const projectId = await project(t, orgId, "CORS Project");
  await oidcApp(t, projectId, "spa", {
    redirectUris: [`${SPA}/callback`],
    appType: "OIDC_APP_TYPE_USER_AGENT",
    authMethodType: "OIDC_AUTH_METHOD_TYPE_NONE",
  });
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await new Promise((r) => pageServer?.close(r));
});

const preflight = (path: string, origin: string, headers = "content-type, authorization, connect-protocol-version") =>
  fetch(`${t.url}${path}`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": headers },
  });

describe("preflights", () => {
  it("allows the API from the instance's and an organization's allowed origins, with Connect's and gRPC-Web's headers", async () => {
    for (const origin of [APP, ORG_APP]) {
      for (const p of ["/svc.user.v2.UserService/ListUsers", "/v2/users", "/scim/v2/x/Users"]) {
        const res = await preflight(p, origin);
        expect(res.status).toBe(204);
        expect(res.headers.get("access-control-allow-origin")).toBe(origin);
        const methods = res.headers.get("access-control-allow-methods") ?? "";
        for (const m of ["POST", "GET", "PUT", "DELETE"]) expect(methods).toContain(m);
        const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase();
        for (const h of ["content-type", "connect-protocol-version", "connect-timeout-ms", "x-grpc-web", "x-user-agent", "grpc-timeout", "authorization"]) {
          expect(allowed).toContain(h);
        }
        expect(res.headers.get("access-control-max-age")).toBe("7200");
        expect(res.headers.get("access-control-allow-credentials")).toBeNull();
      }
    }
  });

  it("refuses other origins (403, no Access-Control-Allow-Origin), the OIDC apps' origins included", async () => {
    for (const origin of [EVIL, SPA, "null"]) {
      const res = await preflight("/svc.user.v2.UserService/ListUsers", origin);
      expect(res.status).toBe(403);
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    }
  });

  it("lets the origins of OIDC applications' redirect URIs call the OAuth endpoints a browser application uses", async () => {
    for (const p of ["/oauth/v2/token", "/oauth/v2/revoke", "/oidc/v1/userinfo"]) {
      const ok = await preflight(p, SPA, "content-type, authorization");
      expect(ok.status).toBe(204);
      expect(ok.headers.get("access-control-allow-origin")).toBe(SPA);
      expect((await preflight(p, EVIL)).status).toBe(403);
    }
  });

  it("lets anyone read discovery and the keys, without credentials", async () => {
    for (const p of ["/.well-known/openid-configuration", "/oauth/v2/keys"]) {
      const res = await fetch(`${t.url}${p}`, { headers: { origin: EVIL } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    }
  });

  it("adds nothing to browser navigations (authorize, the hosted login)", async () => {
    const res = await fetch(`${t.url}/ui/login/login`, { headers: { origin: EVIL } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
  });
});

describe("requests", () => {
  it("exposes the gRPC status headers to an allowed origin, and tells a refused one nothing", async () => {
    const call = (origin: string) =>
      fetch(`${t.url}/svc.user.v2.UserService/ListUsers`, {
        method: "POST",
        headers: { origin, "content-type": "application/json", authorization: `Bearer ${t.pat}` },
        body: "{}",
      });
    const ok = await call(APP);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe(APP);
    expect(ok.headers.get("access-control-expose-headers")).toContain("Grpc-Status");
    expect(ok.headers.get("vary")).toContain("Origin");
    const refused = await call(EVIL);
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
  });
});

const run = browserAvailable() ? describe : describe.skip;
run("connect-web in Chromium on another origin", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchBrowser();
  });
  afterAll(() => browser?.close());

  const callFrom = async (pageOrigin: string, kind: string) => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${pageOrigin}/`);
    const result = (await page.evaluate(
      ([base, token, k]) => (globalThis as unknown as { listUsers(b: string, t: string, k: string): Promise<unknown> }).listUsers(base, token, k),
      [t.server.tokens.issuer as string, t.pat, kind],
    )) as { ok: boolean; detail: string };
    await context.close();
    return result;
  };

  it("calls the API over Connect JSON, Connect binary and gRPC-Web from an allowed origin", async () => {
    for (const kind of ["connect-json", "connect-binary", "grpc-web"]) {
      const result = await callFrom(allowedPage, kind);
      expect([kind, result.ok]).toEqual([kind, true]);
      expect(Number(result.detail)).toBeGreaterThan(0);
    }
  });

  it("is stopped by the browser on an origin nothing allows", async () => {
    for (const kind of ["connect-json", "grpc-web"]) {
      const result = await callFrom(refusedPage, kind);
      expect([kind, result.ok]).toEqual([kind, false]);
    }
  });
});
