// SP-initiated SAML SSO end to end: @node-saml/node-saml as a strict SP (signed assertion required, audience,
// InResponseTo tracked in its cache, clock skew) sends AuthnRequests over HTTP-Redirect and HTTP-POST (signed and
// not), the login UI answers them with SAMLService, and node-saml, xmlsec1 and xmllint accept the Response. Then the
// project gates (RequestDenied, no assertion), answering once, the permission, and many logins at once.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { loginClient, signIn } from "../support/oidc.js";
import { admin, call, type Json, ok } from "../support/rpc.js";
import {
  createResponse,
  idpCertificate,
  nodeSamlSp,
  responseXml,
  samlApp,
  samlRequestOf,
  spKeyPair,
  spMetadata,
  ssoPost,
  ssoRedirect,
  xmlsecVerify,
  xsdValid,
} from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;
let login: Machine;
let projectId: string;
let alice: string;
let aliceId: string;
const entityId = "https://sp.example.com/saml";
const acs = "https://sp.example.com/saml/acs";
const signedEntityId = "https://signed-sp.example.com/saml";
const signedAcs = "https://signed-sp.example.com/saml/acs";
const spKeys = spKeyPair();

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "saml-login-ui");
  projectId = await project(t, orgId, "SAML Project", ["reader", "writer", "admin"]);
  await samlApp(t, projectId, "sp", spMetadata({ entityId, acs: [{ url: acs, isDefault: true }] }), { roleKeys: ["reader", "admin"] });
  await samlApp(t, projectId, "signed-sp", spMetadata({ entityId: signedEntityId, acs: [{ url: signedAcs }], cert: spKeys, authnRequestsSigned: true }), {
    signResponse: true,
  });
  aliceId = await createHuman(t, orgId, "saml-alice");
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  alice = `saml-alice@${domain}`;
  await admin(t, "AddUserGrant", { userId: aliceId, projectId, roleKeys: ["reader", "writer"] });
}, 120_000);
afterAll(() => t?.stop());

/** svc_sign_ins_total{protocol="saml", outcome} on the server's /metrics. */
async function samlSignIns(outcome: "success" | "error"): Promise<number> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("svc_sign_ins_total{") && l.includes('protocol="saml"') && l.includes(`outcome="${outcome}"`));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
}

async function answer(requestId: string): Promise<Json> {
  return createResponse(t, login, requestId, await signIn(t, login, alice));
}

describe("HTTP-Redirect AuthnRequest, HTTP-POST Response", () => {
  it("node-saml accepts the signed assertion, with the NameID, attributes and chosen roles", async () => {
    const sp = await nodeSamlSp(t, entityId, acs);
    const res = await ssoRedirect(t, await sp.getAuthorizeUrlAsync("relay-123", undefined, {}));
    const location = new URL(res.headers.get("location") as string);
    expect(location.pathname).toBe("/ui/login/login");
    const requestId = samlRequestOf(res);
    const read = await ok(t, "rest", login.pat, "GetSAMLRequest", { samlRequestId: requestId });
    expect(read.samlRequest).toMatchObject({ id: requestId, issuer: entityId, assertionConsumerService: acs, relayState: "relay-123" });
    const a = await answer(requestId);
    expect(a).toMatchObject({ url: acs, post: { relayState: "relay-123" } });
    const { profile, loggedOut } = await sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse, RelayState: "relay-123" });
    expect(loggedOut).toBe(false);
    expect(profile).toMatchObject({
      nameID: "saml-alice@example.com",
      nameIDFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
      UserID: aliceId,
      UserName: "saml-alice",
      Email: "saml-alice@example.com",
      FirstName: "Given",
      SurName: "Family",
      FullName: expect.any(String),
      Roles: "reader",
    });
    const xml = responseXml(a);
    expect(xml).toContain("urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport");
    expect(xml).toContain(`<saml:Audience>${entityId}</saml:Audience>`);
    expect(await xsdValid(xml, "protocol")).toMatchObject({ ok: true });
    const cert = await idpCertificate(t);
    expect(await xmlsecVerify(xml, cert)).toBe(true);
    expect(await xmlsecVerify(xml.replace("saml-alice@example.com", "mallory@example.com"), cert)).toBe(false);
    // The same Response a second time: node-saml's InResponseTo cache refuses it.
    await expect(sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse })).rejects.toThrow();
  });
});

describe("HTTP-POST AuthnRequest", () => {
  it("unsigned, to an SP that does not sign: accepted", async () => {
    const sp = await nodeSamlSp(t, entityId, acs, { skipRequestCompression: true });
    const form = (await sp.getAuthorizeMessageAsync("rs", undefined, {})) as Record<string, string>;
    const id = samlRequestOf(await ssoPost(t, form));
    const a = await answer(id);
    await expect(sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse })).resolves.toMatchObject({ profile: { nameID: "saml-alice@example.com" } });
  });

  it("signed with the SP's registered key: accepted, and the Response is signed too (signResponse)", async () => {
    const sp = await nodeSamlSp(t, signedEntityId, signedAcs, {
      skipRequestCompression: true,
      privateKey: spKeys.privateKeyPem,
      signatureAlgorithm: "sha256",
      digestAlgorithm: "sha256",
      wantAuthnResponseSigned: true,
    });
    const form = (await sp.getAuthorizeMessageAsync("rs", undefined, {})) as Record<string, string>;
    expect(Buffer.from(form.SAMLRequest as string, "base64").toString()).toContain("<Signature");
    const a = await answer(samlRequestOf(await ssoPost(t, form)));
    await expect(sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse })).resolves.toMatchObject({ profile: { nameID: "saml-alice@example.com" } });
    expect(await xmlsecVerify(responseXml(a), await idpCertificate(t), "Response")).toBe(true);
    expect(await xmlsecVerify(responseXml(a), await idpCertificate(t), "Assertion")).toBe(true);
    expect(await xsdValid(responseXml(a), "protocol")).toMatchObject({ ok: true });
  });

  it("signed over HTTP-Redirect (SigAlg + Signature over the query): accepted", async () => {
    const sp = await nodeSamlSp(t, signedEntityId, signedAcs, { privateKey: spKeys.privateKeyPem, signatureAlgorithm: "sha256" });
    // node-saml signs querystring's encoding but sends URLSearchParams' (a space differs): a RelayState both encode alike.
    const url = await sp.getAuthorizeUrlAsync("relay/state&x=1", undefined, {});
    expect(new URL(url).searchParams.get("Signature")).toBeTruthy();
    const a = await answer(samlRequestOf(await ssoRedirect(t, url)));
    expect(a.post.relayState).toBe("relay/state&x=1");
    await expect(sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse })).resolves.toMatchObject({ profile: { nameID: "saml-alice@example.com" } });
  });
});

describe("CreateResponse", () => {
  it("answers a request once; a second answer is FailedPrecondition (and counts once in the metrics)", async () => {
    const sp = await nodeSamlSp(t, entityId, acs);
    const id = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    const session = await signIn(t, login, alice);
    const before = await samlSignIns("success");
    await createResponse(t, login, id, session);
    const again = await call(t, "rest", login.pat, "CreateResponse", { samlRequestId: id, session });
    expect(again.status).toBe(400);
    expect(JSON.stringify(again.body)).toContain("Errors.SamlRequest.AlreadyFinished");
    expect((await samlSignIns("success")) - before).toBe(1);
  });

  it("with an error: a Response with that status and no assertion", async () => {
    const sp = await nodeSamlSp(t, entityId, acs);
    const id = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    const errorsBefore = await samlSignIns("error");
    const a = await ok(t, "rest", login.pat, "CreateResponse", {
      samlRequestId: id,
      error: { error: "ERROR_REASON_AUTHN_FAILED", errorDescription: "cancelled" },
    });
    const xml = responseXml(a);
    expect(xml).toContain("urn:oasis:names:tc:SAML:2.0:status:AuthnFailed");
    expect(xml).not.toContain("Assertion");
    await expect(sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse })).rejects.toThrow(/Responder error: cancelled/);
    expect((await samlSignIns("error")) - errorsBefore).toBe(1);
  });

  it("needs IAM_LOGIN_CLIENT (session.link): others are denied", async () => {
    const sp = await nodeSamlSp(t, entityId, acs);
    const id = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    const other = await loginClient(t, orgId, "not-a-login-ui").then(async (m) => {
      await admin(t, "RemoveInstanceMember", { userId: m.userId });
      return m;
    });
    expect((await call(t, "rest", other.pat, "GetSAMLRequest", { samlRequestId: id })).status).toBe(403);
    expect((await call(t, "rest", other.pat, "CreateResponse", { samlRequestId: id, session: await signIn(t, login, alice) })).status).toBe(403);
    expect((await call(t, "rest", login.pat, "GetSAMLRequest", { samlRequestId: "nope" })).status).toBe(404);
  });

  it("a user refused by the project's gates gets RequestDenied at the registered ACS, never an assertion", async () => {
    const gated = await project(t, orgId, "Gated SAML", ["reader"]);
    await admin(t, "UpdateProject", { projectId: gated, authorizationRequired: true });
    const gatedEntity = "https://gated.example.com/saml";
    await samlApp(t, gated, "gated-sp", spMetadata({ entityId: gatedEntity, acs: [{ url: "https://gated.example.com/acs" }] }));
    const sp = await nodeSamlSp(t, gatedEntity, "https://gated.example.com/acs");
    const id = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    const a = await answer(id);
    expect(a.url).toBe("https://gated.example.com/acs");
    const xml = responseXml(a);
    expect(xml).toContain("urn:oasis:names:tc:SAML:2.0:status:RequestDenied");
    expect(xml).not.toContain("Assertion");
    expect(await xsdValid(xml, "protocol")).toMatchObject({ ok: true });
    expect(await xmlsecVerify(xml, await idpCertificate(t), "Response")).toBe(true);
    await expect(sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse })).rejects.toThrow(/Responder error/);
  });
});

describe("many at once", () => {
  it("20 concurrent complete logins get 20 distinct, valid assertions", async () => {
    const sp = await nodeSamlSp(t, entityId, acs);
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const id = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync(`r${i}`, undefined, {})));
        const a = await answer(id);
        const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse, RelayState: `r${i}` });
        return { id, assertionId: /<saml:Assertion [^>]*ID="([^"]+)"/.exec(responseXml(a))?.[1], relay: a.post.relayState, nameID: profile?.nameID };
      }),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(20);
    expect(new Set(results.map((r) => r.assertionId)).size).toBe(20);
    for (const [i, r] of results.entries()) expect(r).toMatchObject({ relay: `r${i}`, nameID: "saml-alice@example.com" });
  }, 60_000);
});

describe("ForceAuthn and IsPassive", () => {
  it("ForceAuthn: a session whose factors predate the request is not enough; a new check is", async () => {
    const earlier = await signIn(t, login, alice);
    const sp = await nodeSamlSp(t, entityId, acs, { forceAuthn: true });
    const id = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    expect((await ok(t, "rest", login.pat, "GetSAMLRequest", { samlRequestId: id })).samlRequest).toMatchObject({ forceAuthn: true });
    const stale = await call(t, "rest", login.pat, "CreateResponse", { samlRequestId: id, session: earlier });
    expect(stale.status).toBe(400);
    expect(JSON.stringify(stale.body)).toContain("Errors.SamlRequest.ReauthenticationRequired");
    const a = await answer(id);
    await expect(sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse })).resolves.toMatchObject({ profile: { nameID: "saml-alice@example.com" } });
  });

  it("IsPassive: the hosted login without a session answers NoPassive at once, without a sign-in page", async () => {
    const sp = await nodeSamlSp(t, entityId, acs, { passive: true });
    const res = await ssoRedirect(t, await sp.getAuthorizeUrlAsync("quiet", undefined, {}));
    const page = await fetch(String(res.headers.get("location")).replace(/^http:\/\/localhost:0/, t.url));
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).toContain(`action="${acs}"`);
    const samlResponse = /name="SAMLResponse" value="([^"]+)"/.exec(html)?.[1] as string;
    const xml = Buffer.from(samlResponse, "base64").toString();
    expect(xml).toContain("urn:oasis:names:tc:SAML:2.0:status:NoPassive");
    expect(xml).not.toContain("Assertion");
    // node-saml reads Responder/NoPassive as "no one signed in", not as an error.
    await expect(sp.validatePostResponseAsync({ SAMLResponse: samlResponse })).resolves.toEqual({ profile: null, loggedOut: false });
  });
});

describe("expiry", () => {
  it("a request not answered within its lifetime is Expired (last: it moves the clock)", async () => {
    const sp = await nodeSamlSp(t, entityId, acs);
    const id = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    t.advanceClock(11 * 60_000);
    const r = await call(t, "rest", login.pat, "GetSAMLRequest", { samlRequestId: id });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain("Errors.SamlRequest.Expired");
  });
});
