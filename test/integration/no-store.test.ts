// Responses that can carry fresh secrets (AddPersonalAccessToken, AddSecret) or
// personal data must not be stored by browsers or shared caches: every
// transport answers with Cache-Control: no-store (RFC 9111 §5.2.2.5), success
// or error alike.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createMachine, defaultOrgId } from "../support/fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;
let userId: string;

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  userId = await createMachine(t, orgId, "no-store-bot");
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

const auth = () => ({ authorization: `Bearer ${t.pat}` });

/** A gRPC-Web request body: one uncompressed message frame. */
function grpcWebFrame(json: string): Buffer {
  const payload = Buffer.from(json);
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

describe("Cache-Control: no-store", () => {
  it("on a Connect response that carries a new token", async () => {
    const res = await fetch(`${t.url}/svc.user.v2.UserService/AddPersonalAccessToken`, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/json" },
      body: JSON.stringify({ userId }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()) as { token?: string }).toHaveProperty("token");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("on a gRPC-Web response that carries a new client secret", async () => {
    const res = await fetch(`${t.url}/svc.user.v2.UserService/AddSecret`, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/grpc-web+json", "x-grpc-web": "1" },
      body: grpcWebFrame(JSON.stringify({ userId })),
    });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).toString()).toContain("clientSecret");
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("on a Connect error", async () => {
    const res = await fetch(`${t.url}/svc.user.v2.UserService/GetUserByID`, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/json" },
      body: JSON.stringify({ userId: "nobody" }),
    });
    expect(res.status).toBe(404);
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("on SCIM answers, resources and errors", async () => {
    const list = await fetch(`${t.url}/scim/v2/${orgId}/Users?count=1`, { headers: auth() });
    expect(list.status).toBe(200);
    expect(list.headers.get("cache-control")).toBe("no-store");
    const missing = await fetch(`${t.url}/scim/v2/${orgId}/Users/nobody`, { headers: auth() });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("cache-control")).toBe("no-store");
  });
});
