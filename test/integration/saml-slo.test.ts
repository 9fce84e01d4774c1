// SAML 2.0 Single Logout (issue 29) with pysaml2 (Debian's python3, strict: signatures with the IdP metadata's
// certificate, Destination, InResponseTo of its own request) as the service providers: an SP-initiated logout over
// HTTP-Redirect and over HTTP-POST ends the svc session, svc sends the session's other SP a LogoutRequest through the
// browser and answers the initiator with a signed LogoutResponse; svc's logout page sends the SPs LogoutRequests
// (IdP-initiated). The refusals: an unsigned LogoutRequest from an SP that signs, a replayed one, one naming a subject
// the SP was never given, a wrong signature.
import { createSign, createVerify } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, type Machine, PASSWORD, project } from "../support/fixtures.js";
import { issuerOf, loginClient, type SessionRef, signIn, visit } from "../support/oidc.js";
import { type PySp, type Pysaml2, pySp, startPysaml2 } from "../support/pysaml2.js";
import { admin, call, type Json } from "../support/rpc.js";
import { createResponse, type KeyPair, nodeSamlSp, REDIRECT, samlApp, samlRequestOf, spMetadata } from "../support/saml.js";
import { formOf } from "../support/saml-idp.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { locationOf, Visitor } from "../support/visitor.js";

let t: TestServer;
let login: Machine;
let alice: string;
let projectId: string;
let py: Pysaml2;

type Sp = PySp;
const A = pySp("slo-a.example.com");
const B = pySp("slo-b.example.com");
/** Registered, and known to pysaml2, but never signed into anything. */
const C = pySp("slo-c.example.com");

beforeAll(async () => {
  t = await startTestServer();
  const orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "slo-login-ui");
  projectId = await project(t, orgId, "SLO");
  await createHuman(t, orgId, "slo-alice");
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  alice = `slo-alice@${domain}`;
  py = await startPysaml2(t, projectId, [{ sp: A }, { sp: B }, { sp: C }]);
}, 120_000);
afterAll(async () => {
  py?.stop();
  await t?.stop();
});

/** The SP signs in with svc (its AuthnRequest, the login UI's CreateResponse with `session`, pysaml2's ACS). */
async function signInAt(s: Sp, session: SessionRef): Promise<Json> {
  const req = await py.ok({ cmd: "login", sp: s.entity });
  const answer = await createResponse(t, login, samlRequestOf(await visit(t, req.url)), session);
  return py.ok({ cmd: "acs", sp: s.entity, id: req.id, response: answer.post.samlResponse });
}

const alive = async (s: SessionRef) => (await call(t, "rest", login.pat, "GetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken })).code === "ok";

/** Sends the browser to `url` (an svc URL as the IdP metadata names it, or a form posted to one). */
function toSvc(url: string, fields?: Record<string, string>): Promise<Response> {
  if (!fields) return visit(t, url);
  return fetch(url.replace(issuerOf(t), t.url), {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
  });
}

let idpCert: string;
/** The HTTP-Redirect binding's query signature of svc's message in `location`, checked with the IdP certificate over the octets as sent. */
async function querySigned(location: string): Promise<boolean> {
  idpCert ??= await (await fetch(`${t.url}/saml/v2/certificate`)).text();
  const raw = new Map(
    location
      .slice(location.indexOf("?") + 1)
      .split("&")
      .map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)] as const),
  );
  const name = raw.has("SAMLRequest") ? "SAMLRequest" : "SAMLResponse";
  const octets = [name, "RelayState", "SigAlg"]
    .filter((k) => raw.has(k))
    .map((k) => `${k}=${raw.get(k)}`)
    .join("&");
  return createVerify("RSA-SHA256")
    .update(octets)
    .verify(idpCert, decodeURIComponent(raw.get("Signature") ?? ""), "base64");
}

/** Where svc sent the browser: a redirect's URL and its query, or the auto-posted form's target and fields. */
async function sentTo(res: Response): Promise<{ url: string; fields: Record<string, string>; binding: "redirect" | "post" }> {
  if (res.status === 302 || res.status === 303) {
    const u = locationOf(res);
    if (u.searchParams.has("SAMLRequest") || u.searchParams.has("SAMLResponse")) {
      // Every message svc sends over HTTP-Redirect is signed; a changed byte breaks it.
      const location = res.headers.get("location") as string;
      expect(await querySigned(location)).toBe(true);
      expect(await querySigned(location.replace("RelayState=", "RelayState=x"))).toBe(false);
    }
    return { url: u.origin + u.pathname, fields: Object.fromEntries(u.searchParams), binding: "redirect" };
  }
  const body = await res.text();
  if (res.status !== 200) throw new Error(`expected a redirect or a form, got ${res.status}: ${body.slice(0, 500)}`);
  const form = formOf(body);
  return { url: form.action, fields: form.fields, binding: "post" };
}

describe("SP-initiated Single Logout (pysaml2)", () => {
  for (const binding of ["redirect", "post"] as const) {
    it(`over HTTP-${binding === "redirect" ? "Redirect" : "POST"}: the session ends, the other SP is told, the initiator gets a signed LogoutResponse`, async () => {
      const session = await signIn(t, login, alice);
      const atA = await signInAt(A, session);
      await signInAt(B, session);
      expect(atA.nameId).toBe("slo-alice@example.com");

      const request = await py.ok({ cmd: "logout", sp: A.entity, binding });
      expect(request.binding).toBe(binding);
      const toB = await sentTo(await toSvc(request.url, binding === "post" ? request.fields : undefined));
      expect(await alive(session)).toBe(false);
      // svc's LogoutRequest to B, over B's HTTP-Redirect endpoint, its query signed: pysaml2 logs B out and answers.
      expect(toB).toMatchObject({ url: B.slo, binding: "redirect" });
      expect(toB.fields).toMatchObject({ SigAlg: "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256" });
      const answerB = await py.ok({
        cmd: "logout_request",
        sp: B.entity,
        binding: "redirect",
        message: toB.fields.SAMLRequest,
        relayState: toB.fields.RelayState,
      });
      expect(answerB.loggedIn).toBe(false);

      // B's LogoutResponse to svc (in the binding svc's request came in); svc answers A in the binding A used.
      expect(answerB.binding).toBe("redirect");
      const toA = await sentTo(await toSvc(answerB.url));
      expect(toA).toMatchObject({ url: A.slo, binding });
      if (request.fields.RelayState) expect(toA.fields.RelayState).toBe(request.fields.RelayState);
      expect(await py.ok({ cmd: "logged_in", sp: A.entity })).toEqual({ loggedIn: true });
      const done = await py.ok({ cmd: "logout_response", sp: A.entity, binding, message: toA.fields.SAMLResponse });
      expect(done).toEqual({ loggedIn: false, status: "urn:oasis:names:tc:SAML:2.0:status:Success" });
    }, 60_000);
  }

  it("an SP that does not confirm: the initiator is told Success/PartialLogout", async () => {
    const session = await signIn(t, login, alice);
    await signInAt(A, session);
    await signInAt(B, session);
    const request = await py.ok({ cmd: "logout", sp: A.entity, binding: "redirect" });
    const toB = await sentTo(await toSvc(request.url));
    // B answers UnknownPrincipal (it holds another user).
    const answerB = await py.ok({
      cmd: "logout_request",
      sp: B.entity,
      binding: "redirect",
      message: toB.fields.SAMLRequest,
      relayState: toB.fields.RelayState,
      otherUser: true,
    });
    expect(answerB.loggedIn).toBe(true);
    const toA = await sentTo(await toSvc(answerB.url));
    expect(toA).toMatchObject({ url: A.slo, binding: "redirect" });
    const xml = inflateRawSync(Buffer.from(toA.fields.SAMLResponse as string, "base64")).toString();
    expect(xml).toMatch(
      /<samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:PartialLogout"><\/samlp:StatusCode><\/samlp:StatusCode>/,
    );
    expect(await alive(session)).toBe(false);
  }, 60_000);

  it("a LogoutResponse svc did not ask for is refused", async () => {
    const session = await signIn(t, login, alice);
    await signInAt(A, session);
    await signInAt(B, session);
    const request = await py.ok({ cmd: "logout", sp: A.entity, binding: "redirect" });
    const toB = await sentTo(await toSvc(request.url));
    const answerB = await py.ok({
      cmd: "logout_request",
      sp: B.entity,
      binding: "redirect",
      message: toB.fields.SAMLRequest,
      relayState: toB.fields.RelayState,
    });
    expect((await toSvc(answerB.url)).status).toBe(302);
    // The same LogoutResponse again: the logout has moved on.
    const again = await toSvc(answerB.url);
    expect(again.status).toBe(400);
    expect(await again.text()).toContain("no logout in progress");
  }, 60_000);
});

describe("IdP-initiated Single Logout", () => {
  it("svc's logout page sends the session's SP a LogoutRequest, and comes back to the signed-out page", async () => {
    const req = await py.ok({ cmd: "login", sp: A.entity });
    const samlRequest = samlRequestOf(await visit(t, req.url));
    const v = new Visitor(t);
    // The login name, then the password: the hosted login answers the SP at once (its auto-posted form).
    await v.get(`/ui/login/login?samlRequest=${samlRequest}`);
    const named = await v.post("/ui/login/login", { samlRequest, loginName: alice });
    const passwordPage = locationOf(named.res);
    await v.get(passwordPage.pathname + passwordPage.search);
    const step = await v.post("/ui/login/password", { samlRequest, loginName: alice, password: PASSWORD });
    expect(step.res.status).toBe(200);
    const toAcs = formOf(step.body);
    expect(toAcs.action).toBe(A.acs);
    await py.ok({ cmd: "acs", sp: A.entity, id: req.id, response: toAcs.fields.SAMLResponse });

    await v.get("/ui/login/logout");
    const out = await v.post("/ui/login/logout", { all: "1" });
    expect(out.res.status).toBe(303);
    const toA = await sentTo(await toSvc(locationOf(out.res).href));
    expect(toA).toMatchObject({ url: A.slo, binding: "redirect" });
    const answer = await py.ok({
      cmd: "logout_request",
      sp: A.entity,
      binding: "redirect",
      message: toA.fields.SAMLRequest,
      relayState: toA.fields.RelayState,
    });
    expect(answer.loggedIn).toBe(false);
    const back = await toSvc(answer.url);
    expect(back.status).toBe(302);
    expect(locationOf(back).pathname).toBe("/ui/login/logout/done");
  }, 60_000);
});

describe("IdP-initiated Single Logout from the account page", () => {
  it("ending another session of the user tells that session's SP, then returns to the account page", async () => {
    const req = await py.ok({ cmd: "login", sp: A.entity });
    const samlRequest = samlRequestOf(await visit(t, req.url));
    const v = new Visitor(t);
    await v.get(`/ui/login/login?samlRequest=${samlRequest}`);
    const named = await v.post("/ui/login/login", { samlRequest, loginName: alice });
    await v.get(locationOf(named.res).pathname + locationOf(named.res).search);
    const signedIn = await v.post("/ui/login/password", { samlRequest, loginName: alice, password: PASSWORD });
    await py.ok({ cmd: "acs", sp: A.entity, id: req.id, response: formOf(signedIn.body).fields.SAMLResponse });
    // Another session of alice's (another device) signed into B.
    const other = await signIn(t, login, alice);
    await signInAt(B, other);

    const account = await v.get("/ui/login/account");
    expect(account.body).toContain(`value="${other.sessionId}"`);
    const ended = await v.post("/ui/login/account/session/end", { target: other.sessionId });
    expect(ended.res.status).toBe(303);
    expect(await alive(other)).toBe(false);
    const toB = await sentTo(await toSvc(locationOf(ended.res).href));
    expect(toB).toMatchObject({ url: B.slo, binding: "redirect" });
    const answer = await py.ok({
      cmd: "logout_request",
      sp: B.entity,
      binding: "redirect",
      message: toB.fields.SAMLRequest,
      relayState: toB.fields.RelayState,
    });
    expect(answer.loggedIn).toBe(false);
    const back = await toSvc(answer.url);
    expect(back.status).toBe(302);
    expect(locationOf(back).pathname).toBe("/ui/login/account");
    // A's session (this browser's) lives on, and A was not told.
    expect(await py.ok({ cmd: "logged_in", sp: A.entity })).toEqual({ loggedIn: true });
  }, 60_000);
});

describe("@node-saml/node-saml as the SP (independent check of svc's query signatures)", () => {
  it("SP-initiated over HTTP-Redirect, then an IdP-initiated LogoutRequest node-saml verifies and answers", async () => {
    const D = pySp("slo-node-saml.example.com");
    await samlApp(
      t,
      projectId,
      "slo-node-saml",
      spMetadata({ entityId: D.entity, acs: [{ url: D.acs }], cert: D.keys, slo: [{ url: D.slo, binding: REDIRECT }] }),
    );
    const sp = await nodeSamlSp(t, D.entity, D.acs, {
      logoutUrl: `${issuerOf(t)}/saml/v2/SLO`,
      logoutCallbackUrl: D.slo,
      privateKey: D.keys.privateKeyPem,
      signatureAlgorithm: "sha256",
    });
    const signInD = async (session: SessionRef) => {
      const samlRequestId = samlRequestOf(await visit(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
      const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: (await createResponse(t, login, samlRequestId, session)).post.samlResponse });
      return profile as NonNullable<typeof profile>;
    };
    const session = await signIn(t, login, alice);
    const profile = await signInD(session);
    const res = await visit(t, await sp.getLogoutUrlAsync(profile, "relay-d", {}));
    expect(res.status).toBe(302);
    expect(await alive(session)).toBe(false);
    const back = res.headers.get("location") as string;
    expect(back.startsWith(`${D.slo}?SAMLResponse=`)).toBe(true);
    const query = back.slice(back.indexOf("?") + 1);
    // node-saml checks the query signature with svc's certificate, the Issuer and InResponseTo of its own request.
    expect(await sp.validateRedirectAsync(Object.fromEntries(new URLSearchParams(query)), query)).toMatchObject({ loggedOut: true });
    const tampered = query.replace("RelayState=relay-d", "RelayState=relay-x");
    await expect(sp.validateRedirectAsync(Object.fromEntries(new URLSearchParams(tampered)), tampered)).rejects.toThrow(/signature/i);

    // IdP-initiated: svc's logout page ends a session D signed into; node-saml verifies svc's LogoutRequest.
    const v = new Visitor(t);
    const samlRequest = samlRequestOf(await visit(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    await v.get(`/ui/login/login?samlRequest=${samlRequest}`);
    const named = await v.post("/ui/login/login", { samlRequest, loginName: alice });
    await v.get(locationOf(named.res).pathname + locationOf(named.res).search);
    const signedIn = await v.post("/ui/login/password", { samlRequest, loginName: alice, password: PASSWORD });
    await sp.validatePostResponseAsync({ SAMLResponse: formOf(signedIn.body).fields.SAMLResponse as string });
    await v.get("/ui/login/logout");
    const out = await v.post("/ui/login/logout", { all: "1" });
    const toD = (await toSvc(locationOf(out.res).href)).headers.get("location") as string;
    const q = toD.slice(toD.indexOf("?") + 1);
    const read = await sp.validateRedirectAsync(Object.fromEntries(new URLSearchParams(q)), q);
    expect(read).toMatchObject({ loggedOut: true, profile: { nameID: "slo-alice@example.com" } });
    const answer = await sp.getLogoutResponseUrlAsync(
      read.profile as NonNullable<typeof read.profile>,
      new URLSearchParams(q).get("RelayState") as string,
      {},
      true,
    );
    const done = await toSvc(answer);
    expect(done.status).toBe(302);
    expect(locationOf(done).pathname).toBe("/ui/login/logout/done");
  }, 60_000);
});

/** A LogoutRequest from `s` over HTTP-Redirect, its query signed with `signWith` (unsigned when null). */
function logoutRedirect(s: Sp, o: { id?: string; nameId: string; signWith?: KeyPair | null }): string {
  const xml = `<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${o.id ?? `_${Math.random().toString(16).slice(2)}`}" Version="2.0" IssueInstant="${new Date().toISOString()}" Destination="${issuerOf(t)}/saml/v2/SLO"><saml:Issuer>${s.entity}</saml:Issuer><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${o.nameId}</saml:NameID></samlp:LogoutRequest>`;
  let q = `SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString("base64"))}&RelayState=r1`;
  const key = o.signWith === undefined ? s.keys : o.signWith;
  if (key) {
    q += `&SigAlg=${encodeURIComponent("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256")}`;
    q += `&Signature=${encodeURIComponent(createSign("RSA-SHA256").update(q).sign(key.privateKeyPem, "base64"))}`;
  }
  return `${t.url}/saml/v2/SLO?${q}`;
}

describe("refused LogoutRequests", () => {
  it("unsigned from an SP that has a signing certificate, or signed with another key: 400, the session lives", async () => {
    const session = await signIn(t, login, alice);
    const at = await signInAt(A, session);
    const unsigned = await fetch(logoutRedirect(A, { nameId: at.nameId, signWith: null }), { redirect: "manual" });
    expect(unsigned.status).toBe(400);
    expect(await unsigned.text()).toContain("must be signed");
    const forged = await fetch(logoutRedirect(A, { nameId: at.nameId, signWith: C.keys }), { redirect: "manual" });
    expect(forged.status).toBe(400);
    expect(await forged.text()).toContain("does not verify");
    expect(await alive(session)).toBe(true);
  }, 60_000);

  it("replayed: the second is refused", async () => {
    const session = await signIn(t, login, alice);
    const at = await signInAt(A, session);
    const url = logoutRedirect(A, { id: "_replayed-logout-1", nameId: at.nameId });
    const first = await fetch(url, { redirect: "manual" });
    expect(first.status).toBe(302);
    expect(await alive(session)).toBe(false);
    const second = await fetch(url, { redirect: "manual" });
    expect(second.status).toBe(400);
    expect(await second.text()).toContain("already received");
  }, 60_000);

  it("for a subject the SP was never given: UnknownPrincipal, and no session ends", async () => {
    const session = await signIn(t, login, alice);
    const at = await signInAt(A, session);
    // C never signed into this session: its (validly signed) LogoutRequest for A's NameID ends nothing.
    const res = await fetch(logoutRedirect(C, { nameId: at.nameId }), { redirect: "manual" });
    expect(res.status).toBe(302);
    const back = locationOf(res);
    expect(back.origin + back.pathname).toBe(C.slo);
    const xml = inflateRawSync(Buffer.from(back.searchParams.get("SAMLResponse") as string, "base64")).toString();
    expect(xml).toContain("urn:oasis:names:tc:SAML:2.0:status:UnknownPrincipal");
    expect(await alive(session)).toBe(true);
  }, 60_000);
});
