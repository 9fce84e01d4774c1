// The SAML peer of `npm run bench -- --targets`: samlify 2.13 (a SAML library for Node) as an identity provider in a
// process of its own, on a random port of 127.0.0.1, answering an SP's AuthnRequest (HTTP-Redirect binding) for a
// user who is already signed in: GET /sso?SAMLRequest=… parses the request with samlify (inflate, parse, the issuer's
// metadata, the ACS), builds a Response with one Assertion (subject, conditions, an AuthnStatement and five
// attributes, as svc's), signs the Assertion (RSA-SHA256, exclusive c14n; the SP's metadata wants signed assertions)
// and answers with the page that posts it to the SP. It prints one JSON line ({"url", "ssoPath"}) once it serves.
//
// samlify validates each message it parses with a schema validator of the caller's choice; svc checks an
// AuthnRequest's structure while reading it and runs no XSD validation, so the peer's validator accepts every message.
//
// SVC_PEER_SAML (JSON): { spMetadata } (the SP's metadata XML).
import { generateKeyPairSync, randomBytes } from "node:crypto";
import http from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import forge from "node-forge";

// samlify's type declarations pull in an older @xmldom (see test/support/saml-idp.ts): loaded untyped.
interface SamlifySp {
  entityMeta: { getAssertionConsumerService(binding: string): string | string[]; getEntityID(): string };
}
interface SamlifyIdp {
  parseLoginRequest(sp: SamlifySp, binding: string, request: unknown): Promise<{ extract: { request: { id: string } } }>;
  createLoginResponse(sp: SamlifySp, info: unknown, binding: string, user: object, o: unknown): Promise<{ context: string }>;
}
const samlify = createRequire(import.meta.url)("samlify") as {
  setSchemaValidator(v: { validate(xml: string): Promise<string> }): void;
  IdentityProvider(settings: Record<string, unknown>): SamlifyIdp;
  ServiceProvider(settings: Record<string, unknown>): SamlifySp;
  SamlLib: { replaceTagsByValue(template: string, values: Record<string, string>): string };
};

samlify.setSchemaValidator({ validate: async () => "skipped" });

const ATTRIBUTE = (name: string) =>
  `<saml:Attribute Name="${name}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic"><saml:AttributeValue xsi:type="xs:string">{${name}}</saml:AttributeValue></saml:Attribute>`;

const TEMPLATE = `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="{ID}" Version="2.0" IssueInstant="{IssueInstant}" Destination="{Destination}" InResponseTo="{InResponseTo}"><saml:Issuer>{Issuer}</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status><saml:Assertion xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema" ID="{AssertionID}" Version="2.0" IssueInstant="{IssueInstant}"><saml:Issuer>{Issuer}</saml:Issuer><saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">{NameID}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="{NotOnOrAfter}" Recipient="{Destination}" InResponseTo="{InResponseTo}"/></saml:SubjectConfirmation></saml:Subject><saml:Conditions NotBefore="{IssueInstant}" NotOnOrAfter="{NotOnOrAfter}"><saml:AudienceRestriction><saml:Audience>{Audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions><saml:AuthnStatement AuthnInstant="{IssueInstant}" SessionIndex="{AssertionID}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement><saml:AttributeStatement>${["Email", "FirstName", "SurName", "FullName", "UserName"].map(ATTRIBUTE).join("")}</saml:AttributeStatement></saml:Assertion></samlp:Response>`;

/** A self-signed certificate for the IdP's key (node-forge, as svc makes its own). */
function selfSigned(): { certPem: string; keyPem: string } {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const keyPem = privateKey.export({ format: "pem", type: "pkcs1" }) as string;
  const k = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(k.n, k.e);
  cert.serialNumber = `01${randomBytes(8).toString("hex")}`;
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: "commonName", value: "bench samlify IdP" }]);
  cert.setIssuer([{ name: "commonName", value: "bench samlify IdP" }]);
  cert.sign(k, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem };
}

function formPage(action: string, fields: Record<string, string>): string {
  const esc = (v: string) => v.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  const inputs = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}"/>`)
    .join("");
  return `<!DOCTYPE html><html><head><title>IdP</title></head><body><form method="post" action="${esc(action)}">${inputs}<button type="submit">Continue</button></form></body></html>`;
}

async function main(): Promise<void> {
  const { spMetadata } = JSON.parse(process.env.SVC_PEER_SAML ?? "") as { spMetadata: string };
  const { certPem, keyPem } = selfSigned();
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const entityId = `${url}/metadata`;
  const idp = samlify.IdentityProvider({
    entityID: entityId,
    signingCert: certPem,
    privateKey: keyPem,
    wantAuthnRequestsSigned: false,
    singleSignOnService: [{ Binding: "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect", Location: `${url}/sso` }],
    nameIDFormat: ["urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"],
    loginResponseTemplate: { context: TEMPLATE, attributes: [] },
  });
  const sp = samlify.ServiceProvider({ metadata: spMetadata });
  const acs = sp.entityMeta.getAssertionConsumerService("post") as string;
  server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    (async () => {
      const u = new URL(req.url ?? "/", url);
      const info = await idp.parseLoginRequest(sp, "redirect", { query: Object.fromEntries(u.searchParams), octetString: u.search.slice(1) });
      const now = new Date();
      const values: Record<string, string> = {
        ID: `_${randomBytes(16).toString("hex")}`,
        AssertionID: `_${randomBytes(16).toString("hex")}`,
        IssueInstant: now.toISOString(),
        NotOnOrAfter: new Date(now.getTime() + 300_000).toISOString(),
        Destination: acs,
        InResponseTo: info.extract.request.id,
        Issuer: entityId,
        NameID: "bench-signer@example.com",
        Audience: sp.entityMeta.getEntityID(),
        Email: "bench-signer@example.com",
        FirstName: "Bench",
        SurName: "Signer",
        FullName: "Bench Signer",
        UserName: "bench-signer",
      };
      const out = await idp.createLoginResponse(
        sp,
        info,
        "post",
        {},
        {
          customTagReplacement: (template: string) => ({ id: values.ID, context: samlify.SamlLib.replaceTagsByValue(template, values) }),
        },
      );
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(formPage(acs, { SAMLResponse: out.context, RelayState: u.searchParams.get("RelayState") ?? "" }));
    })().catch((err: unknown) => {
      res.writeHead(400, { "content-type": "text/plain" }).end(String(err));
    });
  });
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
  process.stdout.write(`${JSON.stringify({ url, ssoPath: "/sso" })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`samlify peer: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
