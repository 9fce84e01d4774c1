// Recorded request sequences in the shapes Microsoft Entra ID and Okta send
// (test/fixtures/scim/*.json), replayed step by step against the real server
// with a service account's token; each response must contain what the
// fixture expects.
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import SCIMMY from "scimmy";
import { type Body, scim } from "../fixtures/scim/client.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { caller, defaultOrgId } from "../support/users.js";

interface Step {
  name: string;
  request: { method: string; path: string; headers?: Record<string, string>; body?: unknown };
  response: { status: number; body?: Body; absent?: string[] };
  capture?: string;
}

const FIXTURES = path.resolve(import.meta.dirname, "../fixtures/scim");
const load = (file: string): { description: string; steps: Step[] } => JSON.parse(readFileSync(path.join(FIXTURES, file), "utf8"));

let t: TestServer;
let base: string;

beforeAll(async () => {
  t = await startTestServer();
  base = `/scim/v2/${await defaultOrgId(t)}`;
});
afterAll(() => t.stop());

function fill<T>(value: T, vars: Record<string, string>): T {
  return JSON.parse(JSON.stringify(value).replace(/\{\{(\w+)\}\}/g, (_m, k: string) => vars[k] ?? `{{${k}}}`)) as T;
}

describe.each(["entra-id.json", "okta.json"])("%s", (file) => {
  const fixture = load(file);
  it(`replays: ${fixture.description.slice(0, 60)}…`, async () => {
    // Each provisioner is a service account with user management rights in the organization.
    const { pat } = await caller(t, base.split("/").pop() as string, `provisioner-${file.replace(/\W/g, "-")}`, ["ORG_USER_MANAGER"]);
    const vars: Record<string, string> = {};
    for (const step of fixture.steps) {
      const req = fill(step.request, vars);
      const r = await scim(t, pat, req.method, base + req.path, req.body, req.headers);
      expect([step.name, r.status]).toEqual([step.name, step.response.status]);
      if (step.response.body) expect(r.body).toMatchObject(fill(step.response.body, vars));
      for (const a of step.response.absent ?? []) expect([step.name, a, r.body[a]]).toEqual([step.name, a, undefined]);
      if (r.status < 300 && r.body?.schemas?.includes("urn:ietf:params:scim:schemas:core:2.0:User")) {
        expect(() => new SCIMMY.Schemas.User(r.body, "out")).not.toThrow();
      }
      if (step.capture) vars[step.capture] = r.body[step.capture];
    }
  });
});
