// SAML across two replicas on one PostgreSQL (child processes with one external URL): they publish the same
// certificate, an AuthnRequest received by one is answered through the other, and a request ID replayed to the
// other replica is still refused. Nothing of a SAML sign-in lives in a process's memory.
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { PG_URL } from "../support/db.js";
import { PASSWORD } from "../support/fixtures.js";
import type { Json, Rpc } from "../support/rest.js";
import { restFetch } from "../support/rest.js";
import { nodeSamlSp, spMetadata } from "../support/saml.js";
import type { ChildServer, Replicas, TestServer } from "../support/server.js";
import { startReplicas } from "../support/server.js";

const itPg = PG_URL ? it : it.skip;
const EXTERNAL = "https://svc.saml-replicas.test";
const entityId = "https://replica-sp.example.com/sp";
const acs = "https://replica-sp.example.com/acs";

let started: Replicas | undefined;
let servers: ChildServer[] = [];
let pat: string;

beforeAll(async () => {
  if (!PG_URL) return;
  started = await startReplicas(2, { SVC_EXTERNAL_URL: EXTERNAL });
  ({ servers, pat } = started);
}, 120_000);
afterAll(() => started?.stop());

const url = (i: number) => (servers[i] as ChildServer).url;
async function call(i: number, rpc: Rpc, body: Json, token = pat): Promise<Json> {
  const res = await restFetch(url(i), token, rpc, body);
  const json = (await res.json()) as Json;
  if (res.status !== 200) throw new Error(`${rpc}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** What nodeSamlSp needs of a test server: where the certificate is (replica 1) and the external URL. */
const viaReplica = (i: number) => ({ url: url(i), server: { tokens: { issuer: EXTERNAL } } }) as unknown as TestServer;

itPg("publish one certificate, and answer each other's requests", async () => {
  const certs = await Promise.all([0, 1].map(async (i) => (await fetch(`${url(i)}/saml/v2/certificate`)).text()));
  expect(certs[1]).toBe(certs[0]);
  const orgId = (await call(0, "GetInstance", {})).instance.defaultOrganizationId;
  const { projectId } = await call(0, "CreateProject", { organizationId: orgId, name: "Replicated SAML" });
  await call(0, "CreateApplication", {
    projectId,
    name: "sp",
    saml: { metadataXml: Buffer.from(spMetadata({ entityId, acs: [{ url: acs }] })).toString("base64") },
  });
  await call(0, "CreateUser", {
    organizationId: orgId,
    username: "replica-alice",
    human: { profile: { givenName: "R", familyName: "A" }, email: { email: "replica-alice@example.com" }, password: { password: PASSWORD } },
  });

  const sp = await nodeSamlSp(viaReplica(1), entityId, acs);
  const ssoUrl = (await sp.getAuthorizeUrlAsync("", undefined, {})).replace(EXTERNAL, url(0));
  const first = await fetch(ssoUrl, { redirect: "manual" });
  expect(first.status).toBe(302);
  const samlRequestId = new URL(first.headers.get("location") as string).searchParams.get("samlRequest") as string;
  // The same request at the other replica: a replay.
  expect((await fetch(ssoUrl.replace(url(0), url(1)), { redirect: "manual" })).status).toBe(400);

  const loginUi = (await call(1, "CreateUser", { organizationId: orgId, username: "replica-login", machine: { name: "replica-login" } })).id;
  await call(1, "AddInstanceMember", { userId: loginUi, roles: ["IAM_LOGIN_CLIENT"] });
  const { token } = await call(1, "AddPersonalAccessToken", { userId: loginUi });
  const domain = (await call(1, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  const session = await call(1, "CreateSession", { checks: { user: { loginName: `replica-alice@${domain}` }, password: { password: PASSWORD } } }, token);
  const answer = await call(1, "CreateResponse", { samlRequestId, session: { sessionId: session.sessionId, sessionToken: session.sessionToken } }, token);
  const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: answer.post.samlResponse });
  expect(profile?.nameID).toBe("replica-alice@example.com");
});

itPg("a change of the SP's application made on one replica holds on the other at once (the app's record is cached)", async () => {
  const orgId = (await call(0, "GetInstance", {})).instance.defaultOrganizationId;
  const { projectId } = await call(0, "CreateProject", { organizationId: orgId, name: "Replicated SAML cache" });
  const cachedEntity = "https://cached-sp.example.com/sp";
  const cachedAcs = "https://cached-sp.example.com/acs";
  const metadataXml = Buffer.from(spMetadata({ entityId: cachedEntity, acs: [{ url: cachedAcs }] })).toString("base64");
  const { appId } = await call(0, "CreateApplication", { projectId, name: "cached sp", saml: { metadataXml } });
  const sp = await nodeSamlSp(viaReplica(0), cachedEntity, cachedAcs);
  // A fresh AuthnRequest (its own ID) at replica 0 each time.
  const sso = async () => fetch((await sp.getAuthorizeUrlAsync("", undefined, {})).replace(EXTERNAL, url(0)), { redirect: "manual" });
  expect((await sso()).status).toBe(302);
  expect((await sso()).status).toBe(302);
  await call(1, "DeactivateApplication", { projectId, appId });
  const refused = await sso();
  expect(refused.status).toBe(400);
  expect(await refused.text()).toMatch(/not active/);
  await call(1, "ReactivateApplication", { projectId, appId });
  expect((await sso()).status).toBe(302);
});
