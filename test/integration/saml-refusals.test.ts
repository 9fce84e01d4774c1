// Every way /saml/v2/SSO refuses an AuthnRequest, each on its own: a 4xx page for the person at the browser (no
// Location: nothing goes to a URL the request named), no SAML request stored, never a 5xx. Requests are built by hand
// here (node-saml only makes valid ones) and signed with xml-crypto where a test needs a signature.
import { deflateRawSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { defaultOrgId, project } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import { REDIRECT, samlApp, samlRequestOf, signAuthnRequest, spKeyPair, spMetadata, ssoPost, ssoUrl } from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let projectId: string;
let inactiveAppId: string;
const sp = "https://refusals.example.com/sp";
const acs = "https://refusals.example.com/acs";
const signedSp = "https://signed-refusals.example.com/sp";
const signedAcs = "https://signed-refusals.example.com/acs";
const keys = spKeyPair();
const stranger = spKeyPair("stranger.example.com");

beforeAll(async () => {
  t = await startTestServer();
  projectId = await project(t, await defaultOrgId(t), "Refusals", []);
  await samlApp(
    t,
    projectId,
    "sp",
    spMetadata({
      entityId: sp,
      acs: [
        { url: acs, isDefault: true },
        { url: `${acs}/redirect`, binding: REDIRECT, index: 7 },
      ],
    }),
  );
  await samlApp(t, projectId, "signed", spMetadata({ entityId: signedSp, acs: [{ url: signedAcs }], cert: keys, authnRequestsSigned: true }));
  inactiveAppId = await samlApp(t, projectId, "inactive", spMetadata({ entityId: "https://inactive.example.com/sp" }));
  await admin(t, "DeactivateApplication", { projectId, appId: inactiveAppId });
}, 120_000);
afterAll(() => t?.stop());

let n = 0;
interface Req {
  id?: string;
  issuer?: string;
  version?: string;
  instant?: string;
  destination?: string | null;
  acsUrl?: string | null;
  acsIndex?: string;
  binding?: string;
}
function authnRequest(r: Req = {}): string {
  const a: Record<string, string | undefined> = {
    ID: r.id ?? `_req${Date.now()}${++n}`,
    Version: r.version ?? "2.0",
    IssueInstant: r.instant ?? new Date().toISOString(),
    Destination: r.destination === null ? undefined : (r.destination ?? ssoUrl(t)),
    AssertionConsumerServiceURL: r.acsUrl === null ? undefined : (r.acsUrl ?? acs),
    AssertionConsumerServiceIndex: r.acsIndex,
    ProtocolBinding: r.binding,
  };
  const attrs = Object.entries(a)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}="${v}"`)
    .join("");
  return `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"${attrs}><saml:Issuer>${r.issuer ?? sp}</saml:Issuer></samlp:AuthnRequest>`;
}

const redirectUrl = (xml: string, extra = "") => `${t.url}/saml/v2/SSO?SAMLRequest=${encodeURIComponent(deflateRawSync(xml).toString("base64"))}${extra}`;
const get = (url: string) => fetch(url, { redirect: "manual" });
const post = (xml: string, extra: Record<string, string> = {}) => ssoPost(t, { SAMLRequest: Buffer.from(xml).toString("base64"), ...extra });

async function refused(res: Response, text: RegExp, status = 400): Promise<void> {
  const body = await res.text();
  expect({ status: res.status, location: res.headers.get("location"), type: res.headers.get("content-type") }).toEqual({
    status,
    location: null,
    type: "text/html; charset=utf-8",
  });
  expect(body).toMatch(text);
}

describe("accepted as a baseline", () => {
  it("a plain request over both bindings", async () => {
    samlRequestOf(await get(redirectUrl(authnRequest())));
    samlRequestOf(await post(authnRequest()));
  });

  it("a request naming the ACS by index, or none (the default)", async () => {
    samlRequestOf(await get(redirectUrl(authnRequest({ acsUrl: null, acsIndex: "7" }))));
    samlRequestOf(await get(redirectUrl(authnRequest({ acsUrl: null, destination: null }))));
  });

  it("a request signed with the registered key over POST", async () => {
    samlRequestOf(await post(signAuthnRequest(authnRequest({ issuer: signedSp, acsUrl: signedAcs }), keys)));
  });
});

describe("refused", () => {
  it("no SAMLRequest (IdP-initiated)", async () => {
    await refused(await get(`${t.url}/saml/v2/SSO`), /only SP-initiated/);
    await refused(await ssoPost(t, { RelayState: "x" }), /only SP-initiated/);
  });

  it("a deflate bomb, quickly and without buffering it", async () => {
    const bomb = deflateRawSync(Buffer.alloc(8 * 1024 * 1024, "<"), { level: 9 });
    const started = Date.now();
    await refused(await get(`${t.url}/saml/v2/SSO?SAMLRequest=${encodeURIComponent(bomb.toString("base64"))}`), /at most 65536 bytes/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("an oversized request", async () => {
    await refused(await post("<x/>".repeat(20_000)), /too large/);
  });

  it("a body that is not base64 or not deflated", async () => {
    await refused(await get(`${t.url}/saml/v2/SSO?SAMLRequest=%%%`), /URL-encoded|base64/);
    await refused(await get(`${t.url}/saml/v2/SSO?SAMLRequest=${encodeURIComponent(Buffer.from("plain").toString("base64"))}`), /DEFLATE/);
  });

  it("a DOCTYPE (no entity expansion, nothing fetched)", async () => {
    const xml = `<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${authnRequest()}`.replace("</saml:Issuer>", "&e;</saml:Issuer>");
    await refused(await post(xml), /DOCTYPE/);
  });

  it("malformed XML, or another message than an AuthnRequest", async () => {
    await refused(await post("<samlp:AuthnRequest"), /well-formed/);
    await refused(await post('<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"/>'), /AuthnRequest/);
  });

  it("a Version other than 2.0", async () => {
    await refused(await get(redirectUrl(authnRequest({ version: "1.1" }))), /Version must be 2.0/);
  });

  it("an unknown Issuer", async () => {
    await refused(await get(redirectUrl(authnRequest({ issuer: "https://unknown.example.com" }))), /not a registered service provider/);
  });

  it("the Issuer of a deactivated application", async () => {
    await refused(await get(redirectUrl(authnRequest({ issuer: "https://inactive.example.com/sp", acsUrl: null }))), /not active/);
  });

  it("an application deactivated or changed just after it served a request, at once (its record is cached)", async () => {
    const live = "https://live-refusals.example.com/sp";
    const liveAcs = "https://live-refusals.example.com/acs";
    const request = () => authnRequest({ issuer: live, acsUrl: liveAcs });
    const appId = await samlApp(t, projectId, "live", spMetadata({ entityId: live, acs: [{ url: liveAcs }] }));
    samlRequestOf(await get(redirectUrl(request())));
    await admin(t, "DeactivateApplication", { projectId, appId });
    await refused(await get(redirectUrl(request())), /not active/);
    await admin(t, "ReactivateApplication", { projectId, appId });
    samlRequestOf(await get(redirectUrl(request())));
    // New metadata: signed requests only, with the SP's key.
    const metadataXml = Buffer.from(spMetadata({ entityId: live, acs: [{ url: liveAcs }], cert: keys, authnRequestsSigned: true })).toString("base64");
    await admin(t, "UpdateApplication", { projectId, appId, saml: { metadataXml } });
    await refused(await post(request()), /AuthnRequests are signed/);
    samlRequestOf(await post(signAuthnRequest(request(), keys)));
    await admin(t, "DeleteApplication", { projectId, appId });
    await refused(await post(signAuthnRequest(request(), keys)), /not a registered service provider/);
  });

  it("an ACS URL that is not registered (exactly), or an unknown index", async () => {
    await refused(await get(redirectUrl(authnRequest({ acsUrl: "https://evil.example.com/acs" }))), /not registered/);
    await refused(await get(redirectUrl(authnRequest({ acsUrl: `${acs}/` }))), /not registered/);
    await refused(await get(redirectUrl(authnRequest({ acsUrl: null, acsIndex: "9" }))), /not registered/);
    await refused(await get(redirectUrl(authnRequest({ acsUrl: acs, binding: REDIRECT }))), /not registered/);
  });

  it("a Destination other than this SSO endpoint", async () => {
    await refused(await get(redirectUrl(authnRequest({ destination: "https://other-idp.example.com/sso" }))), /Destination/);
  });

  it("an IssueInstant outside the window", async () => {
    await refused(await get(redirectUrl(authnRequest({ instant: new Date(Date.now() - 10 * 60_000).toISOString() }))), /IssueInstant/);
    await refused(await get(redirectUrl(authnRequest({ instant: new Date(Date.now() + 10 * 60_000).toISOString() }))), /IssueInstant/);
    await refused(await get(redirectUrl(authnRequest({ instant: "yesterday" }))), /IssueInstant/);
  });

  it("a replayed request ID", async () => {
    const xml = authnRequest({ id: "_replayed1" });
    samlRequestOf(await get(redirectUrl(xml)));
    await refused(await get(redirectUrl(xml)), /already received/);
    await refused(await post(xml), /already received/);
  });

  it("an unsigned request from an SP whose metadata says AuthnRequestsSigned", async () => {
    await refused(await post(authnRequest({ issuer: signedSp, acsUrl: signedAcs })), /not signed|are signed/);
    await refused(await get(redirectUrl(authnRequest({ issuer: signedSp, acsUrl: signedAcs }))), /are signed/);
  });

  it("a signature by a key that is not registered, even with its certificate in KeyInfo", async () => {
    await refused(await post(signAuthnRequest(authnRequest({ issuer: signedSp, acsUrl: signedAcs }), stranger, true)), /registered certificates/);
  });

  it("a signed request changed after signing", async () => {
    const signed = signAuthnRequest(authnRequest({ issuer: signedSp, acsUrl: signedAcs }), keys);
    await refused(await post(signed.replace('Version="2.0"', 'Version="2.0" ForceAuthn="true"')), /registered certificates/);
  });

  it("a redirect signature over other octets (a changed RelayState) or with an unknown SigAlg", async () => {
    const xml = authnRequest({ issuer: signedSp, acsUrl: signedAcs });
    const request = encodeURIComponent(deflateRawSync(xml).toString("base64"));
    const sigAlg = encodeURIComponent("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256");
    const { createSign } = await import("node:crypto");
    const octets = `SAMLRequest=${request}&RelayState=good&SigAlg=${sigAlg}`;
    const signature = encodeURIComponent(createSign("sha256").update(octets).sign(keys.privateKeyPem, "base64"));
    await refused(await get(`${t.url}/saml/v2/SSO?SAMLRequest=${request}&RelayState=evil&SigAlg=${sigAlg}&Signature=${signature}`), /registered certificates/);
    const sha1 = encodeURIComponent("http://www.w3.org/2000/09/xmldsig#rsa-sha1");
    await refused(await get(`${t.url}/saml/v2/SSO?SAMLRequest=${request}&RelayState=good&SigAlg=${sha1}&Signature=${signature}`), /registered certificates/);
    // The same signature over the octets as sent is good.
    samlRequestOf(await get(`${t.url}/saml/v2/SSO?SAMLRequest=${request}&RelayState=good&SigAlg=${sigAlg}&Signature=${signature}`));
  });

  it("XML signature wrapping: a signed request inside an unsigned one, or a second element with the signed ID", async () => {
    const genuine = signAuthnRequest(authnRequest({ id: "_genuine", issuer: signedSp, acsUrl: signedAcs }), keys);
    const signature = /<ds:Signature[\s\S]*<\/ds:Signature>/.exec(genuine)?.[0] as string;
    const inner = genuine.replace(signature, "");
    const evil = authnRequest({ id: "_evil", issuer: signedSp, acsUrl: "https://evil.example.com/acs" });
    const wrapped = evil.replace("</saml:Issuer>", `</saml:Issuer>${signature}<samlp:Extensions>${inner}</samlp:Extensions>`);
    await refused(await post(wrapped), /does not verify with the service provider/);
    const sameId = evil
      .replace('ID="_evil"', 'ID="_genuine"')
      .replace("</saml:Issuer>", `</saml:Issuer>${signature}<samlp:Extensions>${inner}</samlp:Extensions>`);
    await refused(await post(sameId), /does not verify with the service provider/);
    const twoSignatures = genuine.replace("</samlp:AuthnRequest>", `<samlp:Extensions>${genuine}</samlp:Extensions></samlp:AuthnRequest>`);
    await refused(await post(twoSignatures), /exactly one signature/);
  });

  it("repeated parameters, a too long RelayState, an unsupported ProtocolBinding", async () => {
    const url = redirectUrl(authnRequest());
    await refused(await get(`${url}&SAMLRequest=x`), /repeated/);
    await refused(await get(redirectUrl(authnRequest(), `&RelayState=${"r".repeat(1100)}`)), /RelayState/);
    await refused(await get(redirectUrl(authnRequest({ binding: "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Artifact" }))), /ProtocolBinding/);
  });

  it("never answers a 5xx: random bytes, random deflated bytes, mangled requests, odd queries", async () => {
    const { randomBytes } = await import("node:crypto");
    const valid = authnRequest();
    const inputs: string[] = [];
    for (let i = 0; i < 20; i++) {
      const junk = randomBytes(1 + i * 50);
      inputs.push(`SAMLRequest=${encodeURIComponent(junk.toString("base64"))}`);
      inputs.push(`SAMLRequest=${encodeURIComponent(deflateRawSync(junk).toString("base64"))}`);
      const cut = valid.slice(0, Math.floor((valid.length * i) / 20));
      inputs.push(
        `SAMLRequest=${encodeURIComponent(deflateRawSync(cut).toString("base64"))}&SigAlg=x&Signature=${encodeURIComponent(junk.toString("base64"))}`,
      );
    }
    inputs.push("SAMLRequest", "SAMLRequest=&RelayState=", "=&&=", "SAMLRequest=%C0%AF", `SAMLRequest=${"A".repeat(60_000)}`);
    for (const q of inputs) {
      const res = await get(`${t.url}/saml/v2/SSO?${q}`);
      await res.arrayBuffer();
      expect({ q: q.slice(0, 60), status: res.status < 500 }).toEqual({ q: q.slice(0, 60), status: true });
    }
    for (let i = 0; i < 20; i++) {
      const res = await post(randomBytes(1 + i * 100).toString("latin1"));
      await res.arrayBuffer();
      expect(res.status).toBeLessThan(500);
    }
  });

  it("a POST that is not a form", async () => {
    const res = await fetch(`${t.url}/saml/v2/SSO`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(415);
  });
});

describe("SVC_SAML_WANT_AUTHN_REQUESTS_SIGNED=true", () => {
  let strict: TestServer;
  beforeAll(async () => {
    strict = await startTestServer({ SVC_SAML_WANT_AUTHN_REQUESTS_SIGNED: "true" });
    const p = await project(strict, await defaultOrgId(strict), "Strict", []);
    await samlApp(strict, p, "unsigned-sp", spMetadata({ entityId: sp, acs: [{ url: acs }] }));
    await samlApp(strict, p, "signing-sp", spMetadata({ entityId: signedSp, acs: [{ url: signedAcs }], cert: keys }));
  }, 60_000);
  afterAll(() => strict?.stop());

  it("says so in the metadata, refuses unsigned requests and accepts signed ones", async () => {
    expect(await (await fetch(`${strict.url}/saml/v2/metadata`)).text()).toContain('WantAuthnRequestsSigned="true"');
    const xml = (issuer: string, acsUrl: string) => authnRequest({ issuer, acsUrl, destination: "http://localhost:0/saml/v2/SSO" });
    const send = (body: string) =>
      fetch(`${strict.url}/saml/v2/SSO`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ SAMLRequest: Buffer.from(body).toString("base64") }),
      });
    await refused(await send(xml(sp, acs)), /signed AuthnRequests only/);
    await refused(await send(xml(signedSp, signedAcs)), /signed AuthnRequests only/);
    samlRequestOf(await send(signAuthnRequest(xml(signedSp, signedAcs), keys)));
  });
});
