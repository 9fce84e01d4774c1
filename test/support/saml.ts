// The SAML identity provider's test support: SP key pairs and metadata, SAML applications, @node-saml/node-saml as
// the service provider (strict), the login UI's half (SAMLService), and the independent checkers installed on this
// machine: xmllint with the OASIS schemas, xmlsec1, and pysaml2 (Debian's python3).
import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { SAML, type SamlConfig } from "@node-saml/node-saml";
import forge from "node-forge";
import { SignedXml } from "xml-crypto";
import { signCertificate } from "../../src/crypto/x509.js";
import type { Machine } from "./fixtures.js";
import { issuerOf, type SessionRef, visit } from "./oidc.js";
import { admin, type Json, ok } from "./rpc.js";
import type { TestServer } from "./server.js";

const run = promisify(execFile);

export const POST = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST";
export const REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect";

export interface KeyPair {
  privateKeyPem: string;
  certPem: string;
  /** Base64 DER of the certificate. */
  certB64: string;
}

/** A self-signed RSA-2048 certificate for an SP (forge, synchronous: a test fixture). */
export function spKeyPair(cn = "sp.example.com"): KeyPair {
  const keys = forge.pki.rsa.generateKeyPair(2048);
  const cert = forge.pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = "01";
  cert.validity.notBefore = new Date(Date.now() - 86_400_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000 * 365);
  cert.setSubject([{ name: "commonName", value: cn }]);
  cert.setIssuer([{ name: "commonName", value: cn }]);
  signCertificate(cert, forge.pki.privateKeyToPem(keys.privateKey));
  const certPem = forge.pki.certificateToPem(cert);
  return {
    privateKeyPem: forge.pki.privateKeyToPem(keys.privateKey),
    certPem,
    certB64: forge.util.encode64(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes()),
  };
}

/** An SP's AuthnRequest signed as SPs sign them: enveloped, RSA-SHA256, exclusive c14n, after the Issuer (KeyInfo when asked). */
export function signAuthnRequest(xml: string, key: KeyPair, withCert = false): string {
  const sx = new SignedXml({
    privateKey: key.privateKeyPem,
    publicCert: withCert ? key.certPem : undefined,
    signatureAlgorithm: "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    canonicalizationAlgorithm: "http://www.w3.org/2001/10/xml-exc-c14n#",
  });
  sx.addReference({
    xpath: "/*",
    digestAlgorithm: "http://www.w3.org/2001/04/xmlenc#sha256",
    transforms: ["http://www.w3.org/2000/09/xmldsig#enveloped-signature", "http://www.w3.org/2001/10/xml-exc-c14n#"],
  });
  sx.computeSignature(xml, { prefix: "ds", location: { reference: "/*/*[local-name(.)='Issuer']", action: "after" } });
  return sx.getSignedXml();
}

export interface SpOptions {
  entityId: string;
  acs?: { url: string; binding?: string; index?: number; isDefault?: boolean }[];
  cert?: KeyPair;
  /** A KeyDescriptor use="encryption" with this certificate. */
  encryptionCert?: KeyPair;
  authnRequestsSigned?: boolean;
  /** SingleLogoutService endpoints. */
  slo?: { url: string; binding: string; responseUrl?: string }[];
}

/** SP metadata (an EntityDescriptor with one SPSSODescriptor), as an SP would publish it. */
export function spMetadata(o: SpOptions): string {
  const acs = o.acs ?? [{ url: `https://${new URL(o.entityId).host}/acs`, binding: POST, index: 0, isDefault: true }];
  const descriptor = (use: string, k: KeyPair | undefined) =>
    k
      ? `<md:KeyDescriptor use="${use}"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${k.certB64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`
      : "";
  const key = descriptor("signing", o.cert) + descriptor("encryption", o.encryptionCert);
  const services = acs
    .map(
      (a, i) =>
        `<md:AssertionConsumerService Binding="${a.binding ?? POST}" Location="${a.url}" index="${a.index ?? i}"${a.isDefault ? ' isDefault="true"' : ""}/>`,
    )
    .join("");
  const slo = (o.slo ?? [])
    .map((s) => `<md:SingleLogoutService Binding="${s.binding}" Location="${s.url}"${s.responseUrl ? ` ResponseLocation="${s.responseUrl}"` : ""}/>`)
    .join("");
  return `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${o.entityId}">
<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol" AuthnRequestsSigned="${o.authnRequestsSigned ? "true" : "false"}" WantAssertionsSigned="true">${key}${slo}<md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>${services}</md:SPSSODescriptor>
</md:EntityDescriptor>`;
}

/** CreateApplication with a SAML configuration; the app id. */
export async function samlApp(t: TestServer, projectId: string, name: string, metadataXml: string, saml: Json = {}): Promise<string> {
  const res = await admin(t, "CreateApplication", { projectId, name, saml: { metadataXml: Buffer.from(metadataXml).toString("base64"), ...saml } });
  return res.appId;
}

export const idpEntityId = (t: TestServer) => `${issuerOf(t)}/saml/v2/metadata`;
export const ssoUrl = (t: TestServer) => `${issuerOf(t)}/saml/v2/SSO`;

export async function idpCertificate(t: TestServer): Promise<string> {
  return (await fetch(`${t.url}/saml/v2/certificate`)).text();
}

/** node-saml as a strict SP of the test server: signed assertions, audience, InResponseTo tracked, 10 s clock skew. */
export async function nodeSamlSp(t: TestServer, entityId: string, acsUrl: string, extra: Partial<SamlConfig> = {}): Promise<SAML> {
  return new SAML({
    issuer: entityId,
    callbackUrl: acsUrl,
    entryPoint: ssoUrl(t),
    idpCert: await idpCertificate(t),
    idpIssuer: idpEntityId(t),
    audience: entityId,
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: false,
    validateInResponseTo: "always" as SamlConfig["validateInResponseTo"],
    acceptedClockSkewMs: 10_000,
    identifierFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
    ...extra,
  });
}

/** The SAML request id of a redirect to the login UI. */
export function samlRequestOf(res: Response): string {
  if (res.status !== 302) throw new Error(`expected a redirect to the login UI, got ${res.status}`);
  const id = new URL(res.headers.get("location") as string).searchParams.get("samlRequest");
  if (!id) throw new Error(`no samlRequest in ${res.headers.get("location")}`);
  return id;
}

/** GET /saml/v2/SSO as node-saml's redirect URL names it. */
export const ssoRedirect = (t: TestServer, url: string) => visit(t, url);

/** POST /saml/v2/SSO with the form node-saml's POST binding sends. */
export function ssoPost(t: TestServer, form: Record<string, string>): Promise<Response> {
  return fetch(`${t.url}/saml/v2/SSO`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form),
  });
}

/** CreateResponse with a session. */
export async function createResponse(t: TestServer, login: Machine, samlRequestId: string, session: SessionRef): Promise<Json> {
  return ok(t, "rest", login.pat, "CreateResponse", { samlRequestId, session });
}

/** The Response XML out of a POST-binding answer. */
export const responseXml = (answer: Json) => Buffer.from(answer.post.samlResponse, "base64").toString("utf8");

// ---------------------------------------------------------------- independent checkers

let workDir: Promise<string> | undefined;
async function dir(): Promise<string> {
  workDir ??= (async () => {
    const d = await mkdtemp(path.join(tmpdir(), "svc-saml-"));
    const entries = [
      ["http://www.w3.org/TR/2002/REC-xmldsig-core-20020212/xmldsig-core-schema.xsd", "/usr/share/xml/xmltooling/xmldsig-core-schema.xsd"],
      ["http://www.w3.org/TR/2002/REC-xmlenc-core-20021210/xenc-schema.xsd", "/usr/share/xml/xmltooling/xenc-schema.xsd"],
      ["http://www.w3.org/2001/xml.xsd", "/usr/share/xml/xmltooling/xml.xsd"],
    ];
    const lines = entries.map(([id, file]) => `<system systemId="${id}" uri="file://${file}"/><uri name="${id}" uri="file://${file}"/>`).join("\n");
    await writeFile(
      path.join(d, "catalog.xml"),
      `<?xml version="1.0"?>\n<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">\n${lines}\n</catalog>\n`,
    );
    return d;
  })();
  return workDir;
}

let fileNo = 0;
async function tempFile(name: string, content: string): Promise<string> {
  const file = path.join(await dir(), `${++fileNo}-${name}`);
  await writeFile(file, content);
  return file;
}

/** xmllint against an OASIS schema ("metadata" or "protocol"): ok, or the complaint. */
export async function xsdValid(xml: string, schema: "metadata" | "protocol"): Promise<{ ok: boolean; output: string }> {
  const file = await tempFile("doc.xml", xml);
  const xsd = `/usr/share/xml/opensaml/saml-schema-${schema}-2.0.xsd`;
  try {
    const r = await run("/usr/bin/xmllint", ["--noout", "--nonet", "--schema", xsd, file], {
      env: { ...process.env, XML_CATALOG_FILES: path.join(await dir(), "catalog.xml") },
    });
    return { ok: true, output: r.stderr };
  } catch (err) {
    return { ok: false, output: String((err as { stderr?: string }).stderr ?? err) };
  }
}

/** xmlsec1 --verify of the Assertion's (or the Response's, or an AuthnRequest's) signature with the given certificate only. */
export async function xmlsecVerify(xml: string, certPem: string, which: "Assertion" | "Response" | "AuthnRequest" = "Assertion"): Promise<boolean> {
  const file = await tempFile("response.xml", xml);
  const cert = await tempFile("idp.crt", certPem);
  const xpath = which === "Assertion" ? "//*[local-name()='Assertion']/*[local-name()='Signature']" : `/*[local-name()='${which}']/*[local-name()='Signature']`;
  try {
    await run("/usr/bin/xmlsec1", [
      "--verify",
      "--enabled-key-data",
      "rsa",
      "--pubkey-cert-pem",
      cert,
      "--id-attr:ID",
      "urn:oasis:names:tc:SAML:2.0:protocol:Response",
      "--id-attr:ID",
      "urn:oasis:names:tc:SAML:2.0:assertion:Assertion",
      "--id-attr:ID",
      "urn:oasis:names:tc:SAML:2.0:protocol:AuthnRequest",
      "--node-xpath",
      xpath,
      file,
    ]);
    return true;
  } catch {
    return false;
  }
}

export { dir as samlWorkDir, run as runCommand, tempFile as samlTempFile };

const PYSAML2_SP = path.join(import.meta.dirname, "pysaml2-sp.py");

/** pysaml2's SP: an AuthnRequest (HTTP-Redirect URL and ID) towards the IdP metadata in `metadataFile`. */
export async function pysaml2Request(metadataFile: string): Promise<{ id: string; url: string }> {
  const r = await run("/usr/bin/python3", [PYSAML2_SP, "request", metadataFile]);
  return JSON.parse(r.stdout);
}

/** pysaml2's SP parsing a Response (base64) to its request `requestId`: what it read, or the error it raised. */
export async function pysaml2Response(
  metadataFile: string,
  requestId: string,
  samlResponse: string,
  keyPair?: { keyFile: string; certFile: string },
): Promise<Json> {
  const keys = keyPair ? [keyPair.keyFile, keyPair.certFile] : [];
  return new Promise((resolve, reject) => {
    const child = execFile("/usr/bin/python3", [PYSAML2_SP, "response", metadataFile, requestId, ...keys], (err, stdout, stderr) => {
      if (err) reject(new Error(stderr.split("\n").filter(Boolean).slice(-1)[0] ?? String(err)));
      else resolve(JSON.parse(stdout));
    });
    child.stdin?.end(samlResponse);
  });
}
