// A SAML request answered (CreateResponse) writes its audit event with the answer, in the same statement
// (src/store/saml-sign-in.ts), and the outbox's delivery of it to an event execution: saml.request.succeeded for an
// assertion, saml.request.failed for an error status; a request answered twice has one answer and one event, and a
// refused second answer writes nothing. A webhook receiver on loopback sees what ListEvents shows.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { loginClient, signIn } from "../support/oidc.js";
import { admin, call, type Json, ok } from "../support/rpc.js";
import { createResponse, nodeSamlSp, samlApp, samlRequestOf, spMetadata, ssoRedirect } from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let login: Machine;
let alice: string;
let aliceId: string;
let receiver: Server;
const arrivals: Json[] = [];
const entityId = "https://events-sp.example.com/saml";
const acs = "https://events-sp.example.com/saml/acs";

beforeAll(async () => {
  t = await startTestServer({ SVC_ACTIONS_ALLOW_PRIVATE: "true" });
  const orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "saml-events-login-ui");
  const projectId = await project(t, orgId, "SAML events", ["reader"]);
  await samlApp(t, projectId, "events-sp", spMetadata({ entityId, acs: [{ url: acs, isDefault: true }] }));
  aliceId = await createHuman(t, orgId, "saml-events-alice");
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  alice = `saml-events-alice@${domain}`;
  receiver = createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => {
      raw += c.toString("utf8");
    });
    req.on("end", () => {
      arrivals.push(JSON.parse(raw) as Json);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;
  const { id } = await admin(t, "CreateTarget", { name: "saml-events", endpoint: url, kind: "TARGET_KIND_WEBHOOK", timeout: "5s" });
  await admin(t, "SetExecution", { event: { group: "saml.request" }, targetIds: [id] });
}, 120_000);
afterAll(async () => {
  await t?.stop();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
});

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const eventsOf = async (requestId: string): Promise<Json[]> => (await admin(t, "ListEvents", { aggregateId: requestId })).result as Json[];

async function newRequest(): Promise<string> {
  const sp = await nodeSamlSp(t, entityId, acs);
  return samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
}

describe("a SAML request's answer and its event", () => {
  it("an assertion: saml.request.succeeded, listed and delivered; a second answer is refused and writes nothing", async () => {
    const id = await newRequest();
    const session = await signIn(t, login, alice);
    await createResponse(t, login, id, session);
    const [event, ...more] = await eventsOf(id);
    expect(more).toEqual([]);
    expect(event).toMatchObject({ type: "saml.request.succeeded", aggregateType: "saml.request", aggregateId: id });
    expect(event.payload).toEqual({ issuer: entityId, userId: aliceId, sessionId: session.sessionId });
    const delivered = await until("the delivery", () => arrivals.find((a) => a.aggregateId === id));
    expect(delivered).toMatchObject({ id: event.id, type: "saml.request.succeeded", payload: event.payload });

    const again = await call(t, "rest", login.pat, "CreateResponse", { samlRequestId: id, session });
    expect(again.status).toBe(400);
    expect(JSON.stringify(again.body)).toContain("Errors.SamlRequest.AlreadyFinished");
    const refused = await call(t, "rest", login.pat, "CreateResponse", { samlRequestId: id, error: { error: "ERROR_REASON_AUTHN_FAILED" } });
    expect(JSON.stringify(refused.body)).toContain("Errors.SamlRequest.AlreadyFinished");
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["saml.request.succeeded"]);
    // The session's participant was kept with the answer: the SP is among the session's participants.
    const participants = await t.server.db.prisma.sessionParticipant.findMany({ where: { sessionId: session.sessionId } });
    expect(participants.map((p) => p.protocol)).toEqual(["saml"]);
  });

  it("an error status: saml.request.failed, listed and delivered", async () => {
    const id = await newRequest();
    await ok(t, "rest", login.pat, "CreateResponse", { samlRequestId: id, error: { error: "ERROR_REASON_REQUEST_DENIED", errorDescription: "no" } });
    const events = await eventsOf(id);
    expect(events.map((e) => [e.type, e.payload])).toEqual([["saml.request.failed", { issuer: entityId, error: "RequestDenied" }]]);
    const delivered = await until("the delivery", () => arrivals.find((a) => a.aggregateId === id));
    expect(delivered).toMatchObject({ type: "saml.request.failed" });
  });

  it("concurrent answers to one request: one succeeds, with one event", async () => {
    const id = await newRequest();
    const session = await signIn(t, login, alice);
    const replies = await Promise.all(Array.from({ length: 5 }, () => call(t, "rest", login.pat, "CreateResponse", { samlRequestId: id, session })));
    expect(replies.filter((r) => r.code === "ok")).toHaveLength(1);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["saml.request.succeeded"]);
  });
});
