// The REST API's OpenAPI 3.1 document (generated from the protos into gen/openapi; CI checks it does not drift) is
// valid, describes the REST paths the transcoder serves, and is served at /openapi.json with a reference page at
// /docs (Swagger UI from svc itself), which renders in Chromium under its CSP.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { browserAvailable, launchBrowser, newContext } from "../support/browser.js";
import { ROOT, startTestServer, type TestServer } from "../support/server.js";

const FILE = path.join(ROOT, "gen/openapi/svc.openapi.json");
let t: TestServer;

beforeAll(async () => {
  t = await startTestServer();
}, 60_000);
afterAll(() => t?.stop());

describe("the OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document (swagger-parser, in a process of its own)", () => {
    const out = execFileSync(process.execPath, ["--import", "tsx", "scripts/openapi-validate.ts"], { cwd: ROOT, encoding: "utf8" });
    expect(out).toContain("valid OpenAPI 3.1.0");
  });

  it("describes the REST mapping of every RPC with its comment, parameters and schemas", () => {
    const doc = JSON.parse(readFileSync(FILE, "utf8")) as {
      paths: Record<string, Record<string, { operationId: string; description: string; parameters?: { name: string; in: string }[] }>>;
      components: { schemas: Record<string, { properties?: Record<string, unknown>; enum?: string[] }> };
    };
    const get = doc.paths["/v2/users/{user_id}"]?.get;
    expect(get?.operationId).toBe("UserService_GetUserByID");
    expect(get?.parameters).toEqual([expect.objectContaining({ name: "user_id", in: "path" })]);
    expect(doc.paths["/v2/users/new"]?.post?.description).toContain("Creates a human or a machine user");
    expect(doc.paths["/v2/sessions"]?.post?.operationId).toBe("SessionService_CreateSession");
    // proto3 JSON: lowerCamelCase names, enums by name.
    expect(Object.keys(doc.components.schemas["svc.user.v2.CreateUserRequest"]?.properties ?? {})).toContain("organizationId");
    expect(doc.components.schemas["svc.settings.v2.ThemeMode"]?.enum).toContain("THEME_MODE_DARK");
  });

  it("is what svc serves at /openapi.json, to any origin", async () => {
    const res = await fetch(`${t.url}/openapi.json`, { headers: { origin: "https://elsewhere.example.com" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(await res.text()).toBe(readFileSync(FILE, "utf8"));
  });
});

const run = browserAvailable() ? describe : describe.skip;
run("/docs", () => {
  it("renders the API reference in Chromium from svc's own files, under a CSP without inline script", async () => {
    const res = await fetch(`${t.url}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    const browser = await launchBrowser();
    try {
      const context = await newContext(browser);
      const page = await context.newPage();
      const blocked: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error") blocked.push(m.text());
      });
      await page.goto(`${t.url}/docs`);
      await page.getByText("svc REST API").first().waitFor({ timeout: 15_000 });
      expect(await page.getByText("UserService", { exact: true }).count()).toBeGreaterThan(0);
      expect(blocked.filter((b) => b.includes("Content Security Policy"))).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
