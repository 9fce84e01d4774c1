// IdP-initiated SAML Single Logout over the SOAP binding (issue 29): when a session ends without a browser (DeleteSession,
// a user deactivated, locked or deleted, a password change, OIDC end_session, an organization deactivated or deleted)
// or with one (svc's logout page, an SP-initiated logout), each SAML SP it signed into that registered a SOAP
// SingleLogoutService is POSTed a signed LogoutRequest from the outbox. A SOAP receiver on loopback stands in for the
// SPs (SVC_ACTIONS_ALLOW_PRIVATE=true lets svc call it): it checks svc's signature with xmlsec1 and the IdP
// certificate only (independent of svc's code), reads the LogoutRequest's fields and answers as each SP is set to:
// a LogoutResponse with Success (delivered), or each way an answer is refused (not delivered, retried or given up).
import { createSign } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { DOMParser, type Element } from "@xmldom/xmldom";
import { createHuman, createOrg, defaultOrgId, type Machine, PASSWORD, project } from "../support/fixtures.js";
import { codeFlow, discover, issuerOf, loginClient, oidcApp, type SessionRef, signIn, visit } from "../support/oidc.js";
import { type Pysaml2, pySp, startPysaml2 } from "../support/pysaml2.js";
import { admin, ok } from "../support/rpc.js";
import {
  createResponse,
  idpCertificate,
  type KeyPair,
  nodeSamlSp,
  REDIRECT,
  runCommand,
  samlApp,
  samlRequestOf,
  samlTempFile,
  signAuthnRequest,
  spKeyPair,
  spMetadata,
} from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { locationOf, Visitor } from "../support/visitor.js";

const SOAP = "urn:oasis:names:tc:SAML:2.0:bindings:SOAP";
const SOAP_NS = "http://schemas.xmlsoap.org/soap/envelope/";
const PROTOCOL = "urn:oasis:names:tc:SAML:2.0:protocol";
const ASSERTION = "urn:oasis:names:tc:SAML:2.0:assertion";
const STATUS = "urn:oasis:names:tc:SAML:2.0:status:";

/** How an SP answers svc's LogoutRequest. */
type Mode =
  | "pysaml2"
  | "success"
  | "signed"
  | "badSignature"
  | "responder"
  | "requester"
  | "wrongInResponseTo"
  | "wrongIssuer"
  | "fault"
  | "doctype"
  | "notSoap";

interface Received {
  path: string;
  contentType: string | undefined;
  soapAction: string | undefined;
  /** xmlsec1 verified the LogoutRequest's signature with the IdP certificate alone. */
  verified: boolean;
  /** A changed NameID no longer verifies (the check can fail). */
  tamperedVerified: boolean;
  id: string;
  issuer: string;
  destination: string;
  nameId: string;
  nameIdFormat: string | null;
  sessionIndexes: string[];
  notOnOrAfter: string;
}

let t: TestServer;
let login: Machine;
let projectId: string;
let orgId: string;
let domain: string;
let idpCert: string;
let py: Pysaml2 | undefined;
const db = () => t.server.db.prisma;

async function xmlsecVerifies(xml: string): Promise<boolean> {
  const file = await samlTempFile("soap-logout.xml", xml);
  const cert = await samlTempFile("idp.crt", idpCert);
  try {
    await runCommand("/usr/bin/xmlsec1", [
      "--verify",
      "--enabled-key-data",
      "rsa",
      "--pubkey-cert-pem",
      cert,
      "--id-attr:ID",
      "urn:oasis:names:tc:SAML:2.0:protocol:LogoutRequest",
      "--node-xpath",
      "/*[local-name()='Envelope']/*[local-name()='Body']/*[local-name()='LogoutRequest']/*[local-name()='Signature']",
      file,
    ]);
    return true;
  } catch {
    return false;
  }
}

/** The SPs' SOAP endpoints on loopback: each path answers as its mode says and records what it was sent. */
class SoapReceiver {
  received: Received[] = [];
  modes = new Map<string, { mode: Mode; entity: string; keys?: KeyPair }>();
  private server: http.Server | undefined;
  port = 0;
  /** Logout tokens (OIDC back-channel) POSTed to /oidc/... paths. */
  tokens: { path: string; token: string }[] = [];
  /** Why the receiver could not answer (shown when a test fails). */
  errors: string[] = [];

  async up(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.handle(req, Buffer.concat(chunks).toString("utf8")).then(
          ({ status, body }) => res.writeHead(status, { "content-type": "text/xml; charset=utf-8" }).end(body),
          (err: unknown) => {
            this.errors.push(String(err));
            res.writeHead(599).end(String(err));
          },
        );
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async down(): Promise<void> {
    const s = this.server;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  of(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  private async handle(req: http.IncomingMessage, body: string): Promise<{ status: number; body: string }> {
    const path = req.url ?? "";
    if (path.startsWith("/oidc/")) {
      this.tokens.push({ path, token: new URLSearchParams(body).get("logout_token") ?? "" });
      return { status: 200, body: "" };
    }
    const doc = new DOMParser().parseFromString(body, "text/xml");
    const request = doc.getElementsByTagNameNS(PROTOCOL, "LogoutRequest")[0] as Element;
    const text = (ns: string, name: string) => request.getElementsByTagNameNS(ns, name)[0]?.textContent ?? "";
    const nameIdEl = request.getElementsByTagNameNS(ASSERTION, "NameID")[0] as Element;
    const nameId = nameIdEl.textContent ?? "";
    const r: Received = {
      path,
      contentType: req.headers["content-type"],
      soapAction: req.headers.soapaction as string | undefined,
      verified: await xmlsecVerifies(body),
      tamperedVerified: await xmlsecVerifies(body.replace(`>${nameId}</saml:NameID>`, `>x${nameId}</saml:NameID>`)),
      id: request.getAttribute("ID") ?? "",
      issuer: text(ASSERTION, "Issuer"),
      destination: request.getAttribute("Destination") ?? "",
      nameId,
      nameIdFormat: nameIdEl.getAttribute("Format"),
      sessionIndexes: Array.from(request.getElementsByTagNameNS(PROTOCOL, "SessionIndex")).map((e) => e.textContent ?? ""),
      notOnOrAfter: request.getAttribute("NotOnOrAfter") ?? "",
    };
    this.received.push(r);
    const sp = this.modes.get(path);
    if (!sp) return { status: 404, body: "" };
    if (sp.mode === "pysaml2") {
      // pysaml2 reads the SOAP envelope itself, checks svc's signature with the IdP metadata and answers (signed).
      const out = await (py as Pysaml2).ok({ cmd: "soap_logout_request", sp: sp.entity, message: body });
      return { status: 200, body: out.body };
    }
    return answer(sp.mode, r.id, sp.entity, sp.keys);
  }
}

/** The SP's answer in `mode` to the LogoutRequest `id`. */
function answer(mode: Mode, id: string, entity: string, keys?: KeyPair): { status: number; body: string } {
  const envelope = (inner: string) =>
    `<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="${SOAP_NS}"><soap:Body>${inner}</soap:Body></soap:Envelope>`;
  if (mode === "fault") {
    return { status: 500, body: envelope("<soap:Fault><faultcode>soap:Server</faultcode><faultstring>the SP is broken</faultstring></soap:Fault>") };
  }
  if (mode === "notSoap") return { status: 200, body: "<html><body>ok</body></html>" };
  const top = mode === "responder" ? "Responder" : mode === "requester" ? "Requester" : "Success";
  const second = mode === "requester" ? `<samlp:StatusCode Value="${STATUS}UnknownPrincipal"/>` : "";
  const inResponseTo = mode === "wrongInResponseTo" ? "_not-the-request" : id;
  const issuer = mode === "wrongIssuer" ? "https://someone-else.example.com/sp" : entity;
  let response = `<samlp:LogoutResponse xmlns:samlp="${PROTOCOL}" xmlns:saml="${ASSERTION}" ID="_r${Math.random().toString(16).slice(2)}" Version="2.0" IssueInstant="${new Date().toISOString()}" InResponseTo="${inResponseTo}"><saml:Issuer>${issuer}</saml:Issuer><samlp:Status><samlp:StatusCode Value="${STATUS}${top}">${second}</samlp:StatusCode></samlp:Status></samlp:LogoutResponse>`;
  if (mode === "signed" || mode === "badSignature") response = signAuthnRequest(response, mode === "signed" ? (keys as KeyPair) : spKeyPair("forger"));
  if (mode === "doctype") return { status: 200, body: `<!DOCTYPE x [<!ENTITY e "Success">]>${envelope(response)}` };
  return { status: 200, body: envelope(response) };
}

const receiver = new SoapReceiver();

interface SoapSp {
  appId: string;
  entity: string;
  path: string;
  keys: KeyPair;
  acs: string;
}

/** A SAML application whose SLO endpoints are a SOAP one on the receiver (`path`, answering in `mode`) and/or a Redirect one. */
async function soapSp(name: string, mode: Mode | null, redirectSlo = false): Promise<SoapSp> {
  const entity = `https://${name}.example.com/sp`;
  const path = `/${name}/soap`;
  const keys = spKeyPair(`${name}.example.com`);
  const acs = `https://${name}.example.com/acs`;
  const slo = [
    ...(mode ? [{ url: receiver.url(path), binding: SOAP }] : []),
    ...(redirectSlo ? [{ url: `https://${name}.example.com/slo`, binding: REDIRECT }] : []),
  ];
  const appId = await samlApp(t, projectId, name, spMetadata({ entityId: entity, acs: [{ url: acs }], cert: keys, slo }));
  if (mode) receiver.modes.set(path, { mode, entity, keys });
  return { appId, entity, path, keys, acs };
}

/** The session signs into the SP (node-saml's AuthnRequest, the login UI's CreateResponse): its NameID and SessionIndex recorded. */
async function signInAt(sp: SoapSp, session: SessionRef): Promise<void> {
  const node = await nodeSamlSp(t, sp.entity, sp.acs);
  const id = samlRequestOf(await visit(t, await node.getAuthorizeUrlAsync("", undefined, {})));
  await createResponse(t, login, id, session);
}

async function until<T>(what: string, f: () => T | undefined | Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const received = (sp: SoapSp, n = 1) =>
  until(`${n} LogoutRequest(s) at ${sp.path}`, () => (receiver.of(sp.path).length >= n ? receiver.of(sp.path) : undefined));
const deliveriesOf = (sp: SoapSp) => db().delivery.findMany({ where: { targetId: sp.appId }, orderBy: { seq: "asc" } });
const alive = async (s: SessionRef) => (await db().session.count({ where: { id: s.sessionId } })) === 1;

async function user(name: string, org = orgId, orgDomain = domain): Promise<{ id: string; loginName: string }> {
  const id = await createHuman(t, org, name);
  return { id, loginName: `${name}@${orgDomain}` };
}

beforeAll(async () => {
  await receiver.up();
  t = await startTestServer({ SVC_ACTIONS_ALLOW_PRIVATE: "true", SVC_ACTIONS_DELIVERY_BACKOFF_MS: "200" });
  orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "soap-login-ui");
  projectId = await project(t, orgId, "SOAP logout");
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  idpCert = await idpCertificate(t);
}, 120_000);
afterAll(async () => {
  py?.stop();
  await t?.stop();
  await receiver.down();
});

describe("SAML logout over SOAP", () => {
  it("DeleteSession: the SP's SOAP endpoint gets a LogoutRequest signed by the IdP (xmlsec1), naming the subject as it was given it; Success delivers it", async () => {
    const alice = await user("soap-alice");
    const sp = await soapSp("soap-a", "success");
    const redirectOnly = await soapSp("soap-redirect-only", null, true);
    const session = await signIn(t, login, alice.loginName);
    await signInAt(sp, session);
    await signInAt(redirectOnly, session);
    const participant = await db().sessionParticipant.findFirst({ where: { sessionId: session.sessionId, appId: sp.appId } });
    expect(participant?.sessionIndex).toBeTruthy();

    await ok(t, "rest", login.pat, "DeleteSession", { sessionId: session.sessionId, sessionToken: session.sessionToken });
    const [got] = await received(sp);
    expect(got).toMatchObject({
      contentType: "text/xml; charset=utf-8",
      soapAction: '"http://www.oasis-open.org/committees/security"',
      verified: true,
      tamperedVerified: false,
      issuer: `${issuerOf(t)}/saml/v2/metadata`,
      destination: receiver.url(sp.path),
      nameId: "soap-alice@example.com",
      nameIdFormat: participant?.nameIdFormat ?? null,
      sessionIndexes: [participant?.sessionIndex],
    });
    const validFor = Date.parse(got?.notOnOrAfter ?? "") - Date.now();
    expect(validFor).toBeGreaterThan(0);
    expect(validFor).toBeLessThanOrEqual(5 * 60_000);
    const [row] = await until("the delivery recorded delivered", async () => {
      const rows = await deliveriesOf(sp);
      return rows[0]?.state === "delivered" ? rows : undefined;
    });
    expect(row).toMatchObject({ kind: "saml.soap_logout", eventType: "saml.soap_logout", attempts: 1, lastError: null });
    // The SP with HTTP-Redirect only cannot be told without a browser: nothing is queued for it.
    expect(await db().delivery.count({ where: { targetId: redirectOnly.appId } })).toBe(0);
  });

  it("a LogoutResponse signed with the SP's registered key is delivered", async () => {
    const sp = await soapSp("soap-signed", "signed");
    const session = await signIn(t, login, (await user("soap-signer")).loginName);
    await signInAt(sp, session);
    await ok(t, "rest", login.pat, "DeleteSession", { sessionId: session.sessionId, sessionToken: session.sessionToken });
    await received(sp);
    await until("delivered", async () => ((await deliveriesOf(sp))[0]?.state === "delivered" ? true : undefined));
  });

  it("refused answers are not counted as delivered: each is retried with a new LogoutRequest, or given up when the SP refuses the request", async () => {
    const refusing: [Mode, RegExp][] = [
      ["responder", /Responder/],
      ["wrongInResponseTo", /InResponseTo/],
      ["wrongIssuer", /Issuer is not the service provider/],
      ["badSignature", /signature does not verify/],
      ["fault", /SOAP fault: the SP is broken/],
      ["doctype", /DOCTYPE/],
      ["notSoap", /not a SOAP 1\.1 Envelope/],
    ];
    const sps = await Promise.all(refusing.map(([mode]) => soapSp(`soap-refuse-${mode.toLowerCase()}`, mode)));
    const requester = await soapSp("soap-requester", "requester");
    const session = await signIn(t, login, (await user("soap-refused")).loginName);
    for (const sp of [...sps, requester]) await signInAt(sp, session);
    await ok(t, "rest", login.pat, "DeleteSession", { sessionId: session.sessionId, sessionToken: session.sessionToken });

    for (const [i, [mode, error]] of refusing.entries()) {
      const sp = sps[i] as SoapSp;
      // Tried again: a second attempt with a LogoutRequest of its own (a new ID).
      const got = await received(sp, 2);
      expect(got[0]?.id).not.toBe(got[1]?.id);
      const [row] = await deliveriesOf(sp);
      expect({ mode, state: row?.state, error: row?.lastError }).toMatchObject({ mode, state: "pending", error: expect.stringMatching(error) });
    }
    // Requester/UnknownPrincipal: the SP refuses this request; it is given up at once (dead), not retried.
    const [dead] = await until("the requester's delivery dead", async () => {
      const rows = await deliveriesOf(requester);
      return rows[0]?.state === "dead" ? rows : undefined;
    });
    expect(dead?.attempts).toBe(1);
    expect(dead?.lastError).toMatch(/Requester \/ urn:oasis:names:tc:SAML:2.0:status:UnknownPrincipal/);
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.of(requester.path)).toHaveLength(1);
  }, 60_000);

  it("an SP whose SOAP endpoint is down is told once it is back (the outbox retries)", async () => {
    const sp = await soapSp("soap-down", "success");
    const session = await signIn(t, login, (await user("soap-retry")).loginName);
    await signInAt(sp, session);
    receiver.modes.delete(sp.path);
    await ok(t, "rest", login.pat, "DeleteSession", { sessionId: session.sessionId, sessionToken: session.sessionToken });
    await until("a failed attempt", async () => {
      const [row] = await deliveriesOf(sp);
      return row && row.attempts >= 1 && row.lastError ? row : undefined;
    });
    expect((await deliveriesOf(sp))[0]?.lastError).toMatch(/answered 404/);
    receiver.modes.set(sp.path, { mode: "success", entity: sp.entity, keys: sp.keys });
    await until("delivered after the retry", async () => ((await deliveriesOf(sp))[0]?.state === "delivered" ? true : undefined), 60_000);
  }, 90_000);
});

describe("every way a session ends tells the SOAP SPs", () => {
  it("deactivating and locking a user, a password change and DeleteUser", async () => {
    const sp = await soapSp("soap-user-paths", "success");
    const erin = await user("soap-erin");
    const one = await signIn(t, login, erin.loginName);
    await signInAt(sp, one);
    await admin(t, "DeactivateUser", { userId: erin.id });
    expect((await received(sp, 1))[0]?.sessionIndexes).toHaveLength(1);
    expect(await alive(one)).toBe(false);

    await admin(t, "ReactivateUser", { userId: erin.id });
    await signInAt(sp, await signIn(t, login, erin.loginName));
    await admin(t, "LockUser", { userId: erin.id });
    await received(sp, 2);
    await admin(t, "UnlockUser", { userId: erin.id });

    await signInAt(sp, await signIn(t, login, erin.loginName));
    await admin(t, "SetPassword", { userId: erin.id, newPassword: { password: "Erin-Passw0rd-2!", changeRequired: false } });
    await received(sp, 3);

    await signInAt(sp, await signIn(t, login, erin.loginName, "Erin-Passw0rd-2!"));
    await admin(t, "DeleteUser", { userId: erin.id });
    const all = await received(sp, 4);
    expect(all.every((r) => r.verified && r.nameId === "soap-erin@example.com")).toBe(true);
    await until("four deliveries delivered", async () => ((await deliveriesOf(sp)).filter((d) => d.state === "delivered").length === 4 ? true : undefined));
  }, 60_000);

  it("OIDC end_session ends the session: its SAML SP gets the SOAP LogoutRequest and its OIDC application the logout token", async () => {
    const sp = await soapSp("soap-end-session", "success");
    const rp = await oidcApp(t, projectId, "soap-end-session-rp", { devMode: true, backchannelLogoutUri: receiver.url("/oidc/end-session") });
    const dave = await user("soap-dave");
    const session = await signIn(t, login, dave.loginName);
    const flow = await codeFlow(t, await discover(t, rp.clientId, rp.clientSecret), login, dave.loginName, { session });
    await signInAt(sp, session);
    const res = await fetch(`${t.url}/oidc/v1/end_session?${new URLSearchParams({ id_token_hint: flow.tokens.id_token ?? "" })}`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(await alive(session)).toBe(false);
    const [got] = await received(sp);
    expect(got?.verified).toBe(true);
    await until("the logout token", () => (receiver.tokens.some((x) => x.path === "/oidc/end-session") ? true : undefined));
  });

  for (const change of ["DeactivateOrganization", "DeleteOrganization"] as const) {
    it(`${change}: its users' sessions end, telling their SAML SPs (SOAP) and OIDC applications (logout token)`, async () => {
      const name = change === "DeactivateOrganization" ? "deactivated" : "deleted";
      const sp = await soapSp(`soap-org-${name}`, "success");
      const rp = await oidcApp(t, projectId, `soap-org-${name}-rp`, { devMode: true, backchannelLogoutUri: receiver.url(`/oidc/org-${name}`) });
      const org = await createOrg(t, `Soap ${name} org`);
      const orgDomain = (await admin(t, "GetOrganizationByID", { organizationId: org })).organization.primaryDomain;
      const member = await user(`soap-${name}-member`, org, orgDomain);
      const session = await signIn(t, login, member.loginName);
      await codeFlow(t, await discover(t, rp.clientId, rp.clientSecret), login, member.loginName, { session });
      await signInAt(sp, session);
      // A user of another organization, signed into the same SP, is left alone.
      const outsider = await user(`soap-${name}-outsider`);
      const kept = await signIn(t, login, outsider.loginName);
      await signInAt(sp, kept);

      await admin(t, change, { organizationId: org });
      expect(await alive(session)).toBe(false);
      const [got] = await received(sp);
      expect(got).toMatchObject({ verified: true, nameId: `soap-${name}-member@example.com` });
      await until("the logout token", () => (receiver.tokens.some((x) => x.path === `/oidc/org-${name}`) ? true : undefined));
      expect(await alive(kept)).toBe(true);
      await new Promise((r) => setTimeout(r, 500));
      expect(receiver.of(sp.path)).toHaveLength(1);
    }, 60_000);
  }
});

describe("with a browser", () => {
  it("svc's logout page: the SOAP SP is told over SOAP, only the Redirect-only SP through the browser", async () => {
    const soap = await soapSp("soap-page", "success", true);
    const redirectOnly = await soapSp("soap-page-redirect", null, true);
    const fay = await user("soap-fay");
    // This browser signs in through the login pages for the redirect-only SP, then (single sign-on, no page) for the SOAP SP.
    const v = new Visitor(t);
    const requestOf = async (sp: SoapSp) =>
      samlRequestOf(await visit(t, await (await nodeSamlSp(t, sp.entity, sp.acs)).getAuthorizeUrlAsync("", undefined, {})));
    const samlRequest = await requestOf(redirectOnly);
    await v.get(`/ui/login/login?samlRequest=${samlRequest}`);
    const named = await v.post("/ui/login/login", { samlRequest, loginName: fay.loginName });
    await v.get(locationOf(named.res).pathname + locationOf(named.res).search);
    const signedIn = await v.post("/ui/login/password", { samlRequest, loginName: fay.loginName, password: PASSWORD });
    expect(signedIn.body).toContain(redirectOnly.acs);
    const sso = await v.get(`/ui/login/login?samlRequest=${await requestOf(soap)}`);
    expect(sso.body).toContain(soap.acs);
    const participants = await db().sessionParticipant.findMany({ where: { appId: { in: [soap.appId, redirectOnly.appId] } } });
    expect(participants).toHaveLength(2);
    expect(participants[0]?.sessionId).toBe(participants[1]?.sessionId);

    await v.get("/ui/login/logout");
    const out = await v.post("/ui/login/logout", { all: "1" });
    expect(out.res.status).toBe(303);
    // The browser goes to svc's SLO endpoint, which sends it to the redirect-only SP (and not to the SOAP SP's Redirect endpoint).
    const first = await visit(t, locationOf(out.res).href);
    expect(first.status).toBe(302);
    expect(locationOf(first).origin).toBe("https://soap-page-redirect.example.com");
    const [got] = await received(soap);
    expect(got).toMatchObject({ verified: true, nameId: "soap-fay@example.com" });
  });

  it("an SP-initiated logout: the other SPs with SOAP are told over SOAP, the initiator is not (it gets the LogoutResponse)", async () => {
    const initiator = await soapSp("soap-initiator", "success", true);
    const other = await soapSp("soap-other", "success");
    const gus = await user("soap-gus");
    const session = await signIn(t, login, gus.loginName);
    await signInAt(initiator, session);
    await signInAt(other, session);
    const xml = `<samlp:LogoutRequest xmlns:samlp="${PROTOCOL}" xmlns:saml="${ASSERTION}" ID="_sp-init-${Date.now()}" Version="2.0" IssueInstant="${new Date().toISOString()}" Destination="${issuerOf(t)}/saml/v2/SLO"><saml:Issuer>${initiator.entity}</saml:Issuer><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">soap-gus@example.com</saml:NameID></samlp:LogoutRequest>`;
    let q = `SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString("base64"))}&RelayState=r1`;
    q += `&SigAlg=${encodeURIComponent("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256")}`;
    q += `&Signature=${encodeURIComponent(createSign("RSA-SHA256").update(q).sign(initiator.keys.privateKeyPem, "base64"))}`;
    const res = await fetch(`${t.url}/saml/v2/SLO?${q}`, { redirect: "manual" });
    expect(res.status).toBe(302);
    // No other SP goes through the browser: the initiator is answered at once.
    expect(locationOf(res).origin + locationOf(res).pathname).toBe("https://soap-initiator.example.com/slo");
    expect(await alive(session)).toBe(false);
    await received(other);
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.of(initiator.path)).toHaveLength(0);
    expect(await db().delivery.count({ where: { targetId: initiator.appId } })).toBe(0);
  });
});

describe("OIDC end_session with a browser", () => {
  it("sends the browser through the SAML front channel for the Redirect-only SP, then to the post-logout redirect URI; the SOAP SP is told over SOAP", async () => {
    const redirectOnly = await soapSp("soap-es-redirect", null, true);
    const soap = await soapSp("soap-es-soap", "success", true);
    const rp = await oidcApp(t, projectId, "soap-es-rp", { postLogoutRedirectUris: ["https://rp.example.com/bye"] });
    const hank = await user("soap-hank");
    const session = await signIn(t, login, hank.loginName);
    const flow = await codeFlow(t, await discover(t, rp.clientId, rp.clientSecret), login, hank.loginName, { session });
    await signInAt(redirectOnly, session);
    await signInAt(soap, session);
    const query = new URLSearchParams({ id_token_hint: flow.tokens.id_token ?? "", post_logout_redirect_uri: "https://rp.example.com/bye", state: "s1" });
    const res = await fetch(`${t.url}/oidc/v1/end_session?${query}`, { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(await alive(session)).toBe(false);
    expect(locationOf(res).pathname).toBe("/saml/v2/SLO");
    const toSp = await visit(t, locationOf(res).href);
    expect(toSp.status).toBe(302);
    const spUrl = locationOf(toSp);
    expect(spUrl.origin + spUrl.pathname).toBe("https://soap-es-redirect.example.com/slo");
    const request = inflateRawSync(Buffer.from(spUrl.searchParams.get("SAMLRequest") as string, "base64")).toString();
    expect(request).toContain(">soap-hank@example.com</saml:NameID>");
    // The SP's signed LogoutResponse (HTTP-Redirect) brings the browser back: on to the RP's post-logout redirect URI.
    const requestId = /ID="([^"]+)"/.exec(request)?.[1] as string;
    const xml = `<samlp:LogoutResponse xmlns:samlp="${PROTOCOL}" xmlns:saml="${ASSERTION}" ID="_es${Date.now()}" Version="2.0" IssueInstant="${new Date().toISOString()}" InResponseTo="${requestId}"><saml:Issuer>${redirectOnly.entity}</saml:Issuer><samlp:Status><samlp:StatusCode Value="${STATUS}Success"/></samlp:Status></samlp:LogoutResponse>`;
    let q = `SAMLResponse=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString("base64"))}&RelayState=${encodeURIComponent(spUrl.searchParams.get("RelayState") as string)}`;
    q += `&SigAlg=${encodeURIComponent("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256")}`;
    q += `&Signature=${encodeURIComponent(createSign("RSA-SHA256").update(q).sign(redirectOnly.keys.privateKeyPem, "base64"))}`;
    const back = await fetch(`${t.url}/saml/v2/SLO?${q}`, { redirect: "manual" });
    expect(back.status).toBe(302);
    expect(back.headers.get("location")).toBe("https://rp.example.com/bye?state=s1");
    expect((await received(soap))[0]?.verified).toBe(true);
  });
});

describe("pysaml2 as the SP (an independent implementation of the SOAP binding, both ways)", () => {
  it("pysaml2 verifies svc's SOAP LogoutRequest, logs the user out and answers with a signed LogoutResponse that svc accepts", async () => {
    const P = pySp("soap-pysaml2.example.com");
    const path = "/pysaml2/soap";
    py = await startPysaml2(t, projectId, [{ sp: P, soapSlo: receiver.url(path) }]);
    receiver.modes.set(path, { mode: "pysaml2", entity: P.entity });
    const app = await db().application.findFirst({ where: { samlEntityId: P.entity } });
    const session = await signIn(t, login, (await user("soap-pysaml2-user")).loginName);
    const req = await py.ok({ cmd: "login", sp: P.entity });
    const answered = await createResponse(t, login, samlRequestOf(await visit(t, req.url)), session);
    await py.ok({ cmd: "acs", sp: P.entity, id: req.id, response: answered.post.samlResponse });
    expect(await py.ok({ cmd: "logged_in", sp: P.entity })).toEqual({ loggedIn: true });

    await ok(t, "rest", login.pat, "DeleteSession", { sessionId: session.sessionId, sessionToken: session.sessionToken });
    const [got] = await until("pysaml2's LogoutRequest", () => (receiver.of(path).length ? receiver.of(path) : undefined));
    expect(got?.verified).toBe(true);
    const [row] = await until("the delivery delivered", async () => {
      const rows = await db().delivery.findMany({ where: { targetId: app?.id as string } });
      return rows[0]?.state === "delivered" || rows[0]?.lastError ? rows : undefined;
    });
    expect({ ...row, receiverErrors: receiver.errors }).toMatchObject({ state: "delivered", lastError: null, receiverErrors: [] });
    expect(await py.ok({ cmd: "logged_in", sp: P.entity })).toEqual({ loggedIn: false });
  }, 60_000);
});
