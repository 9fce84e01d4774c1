// The SAML IdP's pure parts: which ACS a request gets (by URL exactly, by index, or the default), the SP metadata
// reader's choices (bindings kept, certificates by use), the XML parser's refusals, and the context class by factors.
import { X509Certificate } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import forge from "node-forge";
import { signCertificate } from "../../src/crypto/x509.js";
import { parseIdpMetadata } from "../../src/domain/idp/saml-config.js";
import { contextClass } from "../../src/domain/saml/response.js";
import { rsaKeyProblem } from "../../src/domain/saml/signatures.js";
import { type AssertionConsumerService, chooseAcs, chooseSlo, parseSpMetadata, soapSlo } from "../../src/domain/saml/sp-metadata.js";
import { parseXml } from "../../src/domain/saml/xml.js";
import type { LinkedSession } from "../../src/domain/sessions/link.js";
import { POST, REDIRECT, spKeyPair, spMetadata } from "../support/saml.js";

const SOAP = "urn:oasis:names:tc:SAML:2.0:bindings:SOAP";

const ACS: AssertionConsumerService[] = [
  { url: "https://sp/a", binding: POST, index: 3, isDefault: false },
  { url: "https://sp/a", binding: REDIRECT, index: 1, isDefault: false },
  { url: "https://sp/b", binding: POST, index: 2, isDefault: true },
];

describe("chooseAcs", () => {
  it("matches a URL exactly, preferring HTTP-POST unless a binding is asked for", () => {
    expect(chooseAcs(ACS, { url: "https://sp/a" })?.index).toBe(3);
    expect(chooseAcs(ACS, { url: "https://sp/a", binding: REDIRECT })?.index).toBe(1);
    expect(chooseAcs(ACS, { url: "https://sp/a/" })).toBeUndefined();
    expect(chooseAcs(ACS, { url: "https://SP/a" })).toBeUndefined();
    expect(chooseAcs(ACS, { url: "https://sp/b", binding: REDIRECT })).toBeUndefined();
  });

  it("finds an index, else the default, else the lowest index", () => {
    expect(chooseAcs(ACS, { index: 1 })?.url).toBe("https://sp/a");
    expect(chooseAcs(ACS, { index: 9 })).toBeUndefined();
    expect(chooseAcs(ACS, {})?.url).toBe("https://sp/b");
    expect(
      chooseAcs(
        ACS.map((a) => ({ ...a, isDefault: false })),
        {},
      )?.index,
    ).toBe(1);
  });
});

describe("parseSpMetadata", () => {
  it("keeps the POST and Redirect ACS, the signing certificates and AuthnRequestsSigned", () => {
    const cert = spKeyPair();
    const xml = spMetadata({
      entityId: "https://sp.example.com",
      cert,
      authnRequestsSigned: true,
      acs: [
        { url: "https://sp.example.com/acs", binding: POST, index: 0 },
        { url: "https://sp.example.com/art", binding: "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Artifact", index: 1 },
      ],
    });
    const md = parseSpMetadata(Buffer.from(xml));
    expect(md).toEqual({
      entityId: "https://sp.example.com",
      acs: [{ url: "https://sp.example.com/acs", binding: POST, index: 0, isDefault: false }],
      signingCertificates: [cert.certB64],
      authnRequestsSigned: true,
      slo: [],
    });
  });

  it("keeps the SingleLogoutServices with a binding svc speaks (SOAP too), and refuses a plain-http one", () => {
    const slo = (list: { url: string; binding: string; responseUrl?: string }[]) =>
      parseSpMetadata(Buffer.from(spMetadata({ entityId: "https://sp.example.com", acs: [{ url: "https://sp.example.com/acs" }], slo: list }))).slo;
    expect(
      slo([
        { url: "https://sp.example.com/slo", binding: REDIRECT, responseUrl: "https://sp.example.com/slo-done" },
        { url: "https://sp.example.com/soap", binding: "urn:oasis:names:tc:SAML:2.0:bindings:SOAP" },
        { url: "https://sp.example.com/slo", binding: POST },
      ]),
    ).toEqual([
      { url: "https://sp.example.com/slo", binding: REDIRECT, responseUrl: "https://sp.example.com/slo-done" },
      { url: "https://sp.example.com/soap", binding: SOAP },
      { url: "https://sp.example.com/slo", binding: POST },
    ]);
    expect(() => slo([{ url: "http://sp.example.com/slo", binding: REDIRECT }])).toThrow(/SingleLogoutService Location/);
    // A SOAP endpoint svc would not call is left out (such metadata was accepted before svc spoke SOAP).
    expect(slo([{ url: "http://sp.example.com/soap", binding: SOAP }])).toEqual([]);
    // The browser's messages never go to the SOAP endpoint; svc's back-channel ones only go there.
    const soapOnly = slo([{ url: "https://sp.example.com/soap", binding: SOAP }]);
    expect(chooseSlo(soapOnly)).toBeUndefined();
    expect(soapSlo(soapOnly)).toEqual({ url: "https://sp.example.com/soap", binding: SOAP });
    const both = slo([
      { url: "https://sp.example.com/soap", binding: SOAP },
      { url: "https://sp.example.com/slo", binding: POST },
    ]);
    expect(chooseSlo(both)).toEqual({ url: "https://sp.example.com/slo", binding: POST });
    expect(soapSlo(slo([{ url: "https://sp.example.com/slo", binding: POST }]))).toBeUndefined();
  });

  it("refuses duplicate indexes and an entity id that is missing", () => {
    const dup = spMetadata({
      entityId: "https://x",
      acs: [
        { url: "https://x/1", index: 1 },
        { url: "https://x/2", index: 1 },
      ],
    });
    expect(() => parseSpMetadata(Buffer.from(dup))).toThrow(/unique/);
    expect(() => parseSpMetadata(Buffer.from(spMetadata({ entityId: "", acs: [{ url: "https://x/1" }] })))).toThrow(/entityID/);
  });
});

/** A certificate (base64 DER) for an RSA key of `bits`, or for that key's modulus with the public exponent `e`. */
function rsaCertificate(bits: number, e?: string): string {
  const keys = forge.pki.rsa.generateKeyPair(bits);
  const cert = forge.pki.createCertificate();
  cert.publicKey = e ? forge.pki.setRsaPublicKey(keys.publicKey.n, new forge.jsbn.BigInteger(e, 16)) : keys.publicKey;
  cert.serialNumber = "01";
  cert.validity.notBefore = new Date();
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: "commonName", value: "sp" }]);
  cert.setIssuer([{ name: "commonName", value: "sp" }]);
  signCertificate(cert, forge.pki.privateKeyToPem(keys.privateKey));
  return forge.util.encode64(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes());
}

describe("registered certificates' RSA keys", () => {
  it("accepts 2048 to 8192 bits with a usual exponent, and refuses weaker keys and exponents that make checks dear", () => {
    const md = (certB64: string) => Buffer.from(spMetadata({ entityId: "https://sp.example.com", cert: { certB64, certPem: "", privateKeyPem: "" } }));
    expect(parseSpMetadata(md(spKeyPair().certB64)).signingCertificates).toHaveLength(1);
    expect(() => parseSpMetadata(md(rsaCertificate(1024)))).toThrow(/2048 to 8192 bits \(this one has 1024\)/);
    expect(() => parseSpMetadata(md(rsaCertificate(2048, "200000001")))).toThrow(/public exponent must be at most 2\^32/);
    expect(rsaKeyProblem(new X509Certificate(Buffer.from(rsaCertificate(2048, "3"), "base64")))).toBe("");
    // The same rule for an external identity provider's metadata (brokering).
    const idpMd = (certB64: string) =>
      Buffer.from(
        `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="https://idp.example.com"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certB64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor><md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example.com/sso"/></md:IDPSSODescriptor></md:EntityDescriptor>`,
      );
    expect(parseIdpMetadata(idpMd(spKeyPair().certB64)).certificates).toHaveLength(1);
    expect(() => parseIdpMetadata(idpMd(rsaCertificate(1024)))).toThrow(/2048 to 8192 bits/);
  });
});

describe("parseXml", () => {
  it("refuses DOCTYPEs, entities and malformed documents", () => {
    expect(() => parseXml('<!DOCTYPE a [<!ENTITY b "c">]><a>&b;</a>', "E", "x")).toThrow(/DOCTYPE/);
    expect(() => parseXml("<a>&b;</a>", "E", "x")).toThrow(/well-formed/);
    expect(() => parseXml("<a><b></a>", "E", "x")).toThrow(/well-formed/);
    expect(parseXml("<a><b/></a>", "E", "x").documentElement?.localName).toBe("a");
  });
});

describe("contextClass", () => {
  const at = new Date();
  const session = (factors: Partial<LinkedSession["factors"]>): LinkedSession => ({
    id: "s",
    userId: "u",
    orgId: "o",
    factors: { user: at, webauthnUserVerified: false, ...factors },
    passwordChangeRequired: false,
    expiresAt: null,
  });
  const AC = "urn:oasis:names:tc:SAML:2.0:ac:classes:";

  it("names the factors used", () => {
    expect(contextClass(session({ password: at }))).toBe(`${AC}PasswordProtectedTransport`);
    expect(contextClass(session({ password: at, totp: at }))).toBe(`${AC}MobileTwoFactorContract`);
    expect(contextClass(session({ webauthn: at, webauthnUserVerified: true }))).toBe(`${AC}MobileTwoFactorContract`);
    expect(contextClass(session({ intent: at }))).toBe(`${AC}unspecified`);
  });
});
