// Action targets and SSRF: without SVC_ACTIONS_ALLOW_PRIVATE, svc never opens a connection to a loopback, private or
// link-local address for a target, whether the endpoint names the address (https://127.0.0.1, an IPv4-mapped IPv6
// literal) or a name that resolves to one (localhost, *.localhost): the check is on the address connected to, after
// DNS. A plain TCP listener on loopback counts the connections it gets; before the fix it got one per call.
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { defaultOrgId } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

const MGMT = "urn:svc:iam:org:project:id:svc:aud";

let t: TestServer;
let listener: Server;
let port: number;
const sockets: Socket[] = [];
let clientSecret: string;
const username = "ssrf-machine";

beforeAll(async () => {
  listener = createServer((s) => {
    sockets.push(s);
    s.on("error", () => {});
    s.destroy();
  });
  // Dual stack where the machine has IPv6: 127.0.0.1, ::1 and ::ffff:127.0.0.1 all reach it.
  await new Promise<void>((resolve) => {
    listener.once("error", () => listener.listen(0, "127.0.0.1", resolve));
    listener.listen(0, "::", resolve);
  });
  port = (listener.address() as { port: number }).port;
  t = await startTestServer();
  const orgId = await defaultOrgId(t);
  const { id } = await admin(t, "CreateUser", { organizationId: orgId, username, machine: { name: username, accessTokenType: "ACCESS_TOKEN_TYPE_JWT" } });
  ({ clientSecret } = await admin(t, "AddSecret", { userId: id }));
}, 120_000);
afterAll(async () => {
  await admin(t, "SetExecution", { function: "preaccesstoken", targetIds: [] }).catch(() => {});
  await t?.stop();
  listener?.close();
});

async function token(): Promise<Response> {
  return fetch(`${t.url}/oauth/v2/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${username}:${clientSecret}`).toString("base64")}`,
    },
    body: new URLSearchParams({ grant_type: "client_credentials", scope: MGMT }),
  });
}

describe("action targets on private addresses, without SVC_ACTIONS_ALLOW_PRIVATE", () => {
  it.each([
    ["an IPv4 loopback literal", () => `https://127.0.0.1:${port}/hook`],
    ["an IPv4-mapped IPv6 literal", () => `https://[::ffff:127.0.0.1]:${port}/hook`],
    ["localhost", () => `https://localhost:${port}/hook`],
    ["a name under .localhost", () => `https://svc-ssrf.localhost:${port}/hook`],
    ["plain http on loopback", () => `http://127.0.0.1:${port}/hook`],
  ])("%s: the call fails before any connection is opened", async (_what, endpoint) => {
    const { id } = await admin(t, "CreateTarget", { name: `ssrf-${_what}`, endpoint: endpoint(), timeout: "2s", interruptOnError: true });
    await admin(t, "SetExecution", { function: "preaccesstoken", targetIds: [id] });
    const before = sockets.length;
    const res = await token();
    // interrupt_on_error: the refused call refuses the token, as any failed target does.
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: "temporarily_unavailable" });
    expect(sockets.length).toBe(before);
    await admin(t, "SetExecution", { function: "preaccesstoken", targetIds: [] });
    await admin(t, "DeleteTarget", { id });
  });
});
