// SAML scenarios: signed SAML Responses beside the bound they cannot beat, the RSA-2048 signatures alone. A response
// here is the IdP's own work (issue 14): parse and verify an SP's signed AuthnRequest (HTTP-POST binding, enveloped
// signature checked with the SP's certificate; or HTTP-Redirect, the query's signature checked over its octets and the
// request inflated), then build, canonicalize and sign the Assertion; measured in this process. svc signs in libuv's thread pool (crypto.sign with a callback), as the bound does here: both keep
// CONCURRENCY operations in flight, as a server does with concurrent sign-ins, and the synchronous bound (one core,
// one at a time) is kept beside them for comparison with earlier runs.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import forge from "node-forge";
import { SignedXml } from "xml-crypto";
import { signCertificate } from "../../src/crypto/x509.js";
import type { UserView } from "../../src/domain/identity/users.js";
import { rsaSha256 } from "../../src/domain/saml/canonical.js";
import { successResponse } from "../../src/domain/saml/response.js";
import { envelopedSignature, RSA_SHA256, verifyEnveloped, verifyQuerySignature } from "../../src/domain/saml/signatures.js";
import { parseXml } from "../../src/domain/saml/xml.js";
import type { LinkedSession } from "../../src/domain/sessions/link.js";
import type { BenchContext, LoadResult, Scenario } from "../run.js";

const SP = "https://sp.example.com/metadata";
const ACS = "https://sp.example.com/acs";
const IDP = "https://id.example.com/saml/v2/metadata";

function selfSigned(key: KeyObject, cn: string): string {
  const k = forge.pki.privateKeyFromPem(key.export({ format: "pem", type: "pkcs1" }) as string) as forge.pki.rsa.PrivateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(k.n, k.e);
  cert.serialNumber = `01${randomBytes(8).toString("hex")}`;
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: "commonName", value: cn }]);
  cert.setIssuer([{ name: "commonName", value: cn }]);
  signCertificate(cert, key);
  return forge.pki.certificateToPem(cert);
}

function rsaKey(): KeyObject {
  return generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
}

/** An SP's AuthnRequest, signed (enveloped, RSA-SHA256, exclusive c14n) with its key. */
function signedAuthnRequest(spKey: KeyObject, spCert: string): string {
  const id = `_${randomBytes(20).toString("hex")}`;
  const xml = `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${new Date().toISOString()}" Destination="https://id.example.com/saml/v2/SSO" AssertionConsumerServiceURL="${ACS}" ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"><saml:Issuer>${SP}</saml:Issuer><samlp:NameIDPolicy Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress" AllowCreate="true"/></samlp:AuthnRequest>`;
  const sx = new SignedXml({
    privateKey: spKey.export({ format: "pem", type: "pkcs8" }) as string,
    publicCert: spCert,
    signatureAlgorithm: "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    canonicalizationAlgorithm: "http://www.w3.org/2001/10/xml-exc-c14n#",
  });
  sx.addReference({
    xpath: "/*",
    digestAlgorithm: "http://www.w3.org/2001/04/xmlenc#sha256",
    transforms: ["http://www.w3.org/2000/09/xmldsig#enveloped-signature", "http://www.w3.org/2001/10/xml-exc-c14n#"],
  });
  sx.computeSignature(xml, { prefix: "ds", location: { reference: "//*[local-name(.)='Issuer']", action: "after" } });
  return sx.getSignedXml();
}

/** Operations in flight at once: the thread pool's default size. */
const CONCURRENCY = 4;

function result(latencies: number[], elapsed: number): LoadResult {
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { requestsPerSecond: latencies.length / elapsed, latencyP50Ms: at(0.5), latencyP99Ms: at(0.99), requests: latencies.length, non2xx: 0, errors: 0 };
}

/** `work` run by CONCURRENCY loops at once for `seconds`. */
async function timedAsync(seconds: number, work: () => Promise<void>): Promise<LoadResult> {
  const latencies: number[] = [];
  const start = performance.now();
  const end = start + seconds * 1000;
  const loop = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      await work();
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  return result(latencies, (performance.now() - start) / 1000);
}

function timedLoop(seconds: number, work: () => void): LoadResult {
  const latencies: number[] = [];
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  while (performance.now() < end) {
    const t0 = performance.now();
    work();
    latencies.push(performance.now() - t0);
  }
  return result(latencies, (performance.now() - start) / 1000);
}

let keys: { idp: KeyObject; idpCert: string; sp: KeyObject; spCert: string } | undefined;
const world = () => {
  if (!keys) {
    const idp = rsaKey();
    const sp = rsaKey();
    keys = { idp, idpCert: selfSigned(idp, "svc bench IdP"), sp, spCert: selfSigned(sp, "bench SP") };
  }
  return keys;
};

/** RSA-2048 PKCS#1 v1.5 signatures over a SHA-256 digest, the operation at the heart of each Response: one at a time. */
async function rsaBoundSync(_ctx: BenchContext, seconds: number): Promise<LoadResult> {
  const { idp } = world();
  const data = randomBytes(2048);
  return timedLoop(seconds, () => {
    sign("sha256", data, idp);
  });
}

/** The same signatures as svc makes them: in the thread pool, CONCURRENCY in flight (the bound of the next scenario). */
async function rsaBound(_ctx: BenchContext, seconds: number): Promise<LoadResult> {
  const { idp } = world();
  const data = randomBytes(1200).toString("base64");
  return timedAsync(seconds, async () => {
    await rsaSha256(data, idp);
  });
}

/** An SP's AuthnRequest for the HTTP-Redirect binding: the query (deflated, base64, SigAlg) signed as it is sent. */
function signedRedirectQuery(spKey: KeyObject): string {
  const id = `_${randomBytes(20).toString("hex")}`;
  const xml = `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${new Date().toISOString()}" Destination="https://id.example.com/saml/v2/SSO" AssertionConsumerServiceURL="${ACS}" ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"><saml:Issuer>${SP}</saml:Issuer><samlp:NameIDPolicy Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress" AllowCreate="true"/></samlp:AuthnRequest>`;
  const octets = `SAMLRequest=${encodeURIComponent(deflateRawSync(xml).toString("base64"))}&RelayState=bench&SigAlg=${encodeURIComponent(RSA_SHA256)}`;
  return `${octets}&Signature=${encodeURIComponent(sign("sha256", Buffer.from(octets), spKey).toString("base64"))}`;
}

/** What both response scenarios answer with: the IdP's certificate and key, a signed-in session and its user. */
function answering() {
  const { idp, idpCert } = world();
  const base64 = forge.util.encode64(forge.pem.decode(idpCert)[0]?.body ?? "");
  const cert = { id: "bench", pem: idpCert, base64, privateKey: idp };
  const now = new Date();
  const session: LinkedSession = {
    id: "bench-session",
    userId: "u1",
    orgId: "o1",
    factors: { user: now, password: now, webauthnUserVerified: false },
    passwordChangeRequired: false,
    expiresAt: null,
  };
  const user = {
    id: "u1",
    orgId: "o1",
    username: "alice",
    preferredLoginName: "alice@example.com",
    loginNames: ["alice@example.com"],
    givenName: "Alice",
    familyName: "Example",
    displayName: "Alice Example",
    email: "alice@example.com",
  } as UserView;
  const config = { kind: "saml", entityId: SP, nameIdFormat: "emailAddress", roleKeys: [], assertionLifetimeSeconds: 300, signResponse: false } as never;
  return async (requestId: string) => {
    const out = await successResponse(
      { requestId, acsUrl: ACS, issuer: SP },
      { entityId: IDP, cert, signResponse: false },
      { user, session, config, roles: [] },
      new Date(),
    );
    if (!out.includes("SignatureValue")) throw new Error("no signature");
    createHash("sha256").update(out);
  };
}

/** The same for the HTTP-Redirect binding: the query's signature checked over its octets, then inflated and parsed. */
async function samlRedirectResponses(_ctx: BenchContext, seconds: number): Promise<LoadResult> {
  const { sp, spCert } = world();
  const spBase64 = forge.util.encode64(forge.pem.decode(spCert)[0]?.body ?? "");
  const queries = Array.from({ length: 64 }, () => signedRedirectQuery(sp));
  const respond = answering();
  let i = 0;
  return timedAsync(seconds, async () => {
    const query = queries[i++ % queries.length] as string;
    const params = new Map(query.split("&").map((p) => p.split("=") as [string, string]));
    const octets = query.slice(0, query.indexOf("&Signature="));
    const signature = decodeURIComponent(params.get("Signature") ?? "");
    if (!verifyQuerySignature(octets, RSA_SHA256, signature, [spBase64])) throw new Error("the bench's query signature did not verify");
    const xml = inflateRawSync(Buffer.from(decodeURIComponent(params.get("SAMLRequest") ?? ""), "base64"), { maxOutputLength: 64 * 1024 }).toString("utf8");
    const doc = parseXml(xml, "Errors.Saml.Request.Malformed", "the AuthnRequest");
    await respond(doc.documentElement?.getAttribute("ID") ?? "");
  });
}

async function samlResponses(_ctx: BenchContext, seconds: number): Promise<LoadResult> {
  const { sp, spCert } = world();
  // A fresh request per response would time the SP's signing too: a pool of pre-signed requests, reused in turn.
  const requests = Array.from({ length: 64 }, () => signedAuthnRequest(sp, spCert));
  // Registered SP certificates are kept as base64 DER, as metadata carries them.
  const spBase64 = forge.util.encode64(forge.pem.decode(spCert)[0]?.body ?? "");
  const respond = answering();
  let i = 0;
  return timedAsync(seconds, async () => {
    const xml = requests[i++ % requests.length] as string;
    const doc = parseXml(xml, "Errors.Saml.Request.Malformed", "the AuthnRequest");
    const signature = envelopedSignature(doc);
    if (!signature || !verifyEnveloped(doc, signature, [spBase64])) throw new Error("the bench's AuthnRequest did not verify");
    await respond(doc.documentElement?.getAttribute("ID") ?? "");
  });
}

export const SAML_SCENARIOS: Scenario[] = [
  { name: "RSA-2048 signatures alone, one at a time on the event loop (the earlier bound of SAML responses)", method: "POST", path: "-", local: rsaBoundSync },
  { name: `RSA-2048 signatures alone, in the thread pool, ${CONCURRENCY} in flight (bound of SAML responses)`, method: "POST", path: "-", local: rsaBound },
  {
    name: `SAML response: verify a signed AuthnRequest, build and sign the Assertion, ${CONCURRENCY} in flight`,
    method: "POST",
    path: "-",
    local: samlResponses,
  },
  {
    name: `SAML response to a signed HTTP-Redirect AuthnRequest (query signature), ${CONCURRENCY} in flight`,
    method: "GET",
    path: "-",
    local: samlRedirectResponses,
  },
];
