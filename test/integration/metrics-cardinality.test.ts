// Issue 23, finding 6: /metrics labels come from bounded sets. Anonymous requests for paths svc does not serve
// (`/grpc.*`, `/svc.*`, `/v2/<letters>`, `/oauth/v2/*`, `/.well-known/*`, `/saml/v2/*`) all count under one constant
// route each: a scanner cannot grow the scrape (and the metrics store) without bound.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { startTestServer, type TestServer } from "../support/server.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
}, 60_000);
afterAll(async () => {
  await s?.stop();
});

const word = () =>
  randomBytes(6)
    .toString("base64")
    .replace(/[^a-z]/gi, "q")
    .toLowerCase();

/** Paths svc does not serve, each new at every call, in every family the route label is derived from. */
const unknownPaths = () => [
  `/grpc.${word()}.v1.${word()}/${word()}`,
  `/grpc.health.v1.Health/${word()}`,
  `/svc.${word()}.v2.${word()}/${word()}`,
  `/v2/${word()}`,
  `/v2/${word()}/${word()}`,
  `/oauth/v2/${word()}`,
  `/oidc/v1/${word()}`,
  `/.well-known/${word()}`,
  `/saml/v2/${word()}`,
  `/saml/v2/${word()}/${word()}`,
  `/scim/v2/${word()}/${word()}`,
  `/${word()}`,
];

async function series(): Promise<string[]> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  return text.split("\n").filter((l) => /^svc_request(s_total|_duration_seconds_count)\{/.test(l));
}

async function hit(paths: string[]): Promise<void> {
  for (const p of paths) {
    for (const method of ["GET", "POST"]) {
      const res = await fetch(s.url + p, { method, headers: { "content-type": "application/json" }, body: method === "POST" ? "{}" : undefined });
      await res.arrayBuffer();
    }
  }
}

describe("metrics label cardinality (issue 23, finding 6)", () => {
  it("many random unknown paths add no series after the first of each kind", async () => {
    await hit(unknownPaths());
    await series(); // the scrape's own series, from here on
    const before = await series();
    for (let i = 0; i < 10; i++) await hit(unknownPaths());
    const after = await series();
    expect(after.map((l) => l.split("}")[0])).toEqual(before.map((l) => l.split("}")[0]));
    expect(after.length).toBe(before.length);
  }, 120_000);

  it("known routes keep their own labels", async () => {
    await fetch(`${s.url}/oauth/v2/token`, { method: "POST", body: "grant_type=x", headers: { "content-type": "application/x-www-form-urlencoded" } });
    await fetch(`${s.url}/v2/users`, { method: "POST", headers: { authorization: `Bearer ${s.pat}`, "content-type": "application/json" }, body: "{}" });
    await fetch(`${s.url}/saml/v2/metadata`);
    const labels = (await series()).join("\n");
    expect(labels).toContain('route="/oauth/v2/token"');
    expect(labels).toContain('route="/v2/users"');
    expect(labels).toContain('route="/saml/v2/metadata"');
  }, 60_000);
});
