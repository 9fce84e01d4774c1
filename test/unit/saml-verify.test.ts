// The enveloped-signature check of AuthnRequests (src/domain/saml/signatures.ts): what it accepts (exclusive and
// inclusive c14n, SHA-256/512, a prefixed or default dsig namespace) and what it refuses, on requests signed by
// xml-crypto's SignedXml (an independent signer of the same standard).
import { describe, expect, it } from "@jest/globals";
import { SignedXml } from "xml-crypto";
import { envelopedSignature, verifyEnveloped } from "../../src/domain/saml/signatures.js";
import { parseXml } from "../../src/domain/saml/xml.js";
import { spKeyPair } from "../support/saml.js";

const sp = spKeyPair("verify-sp");
const other = spKeyPair("other-sp");
const EXC = "http://www.w3.org/2001/10/xml-exc-c14n#";
const INC = "http://www.w3.org/TR/2001/REC-xml-c14n-20010315";
const ENV = "http://www.w3.org/2000/09/xmldsig#enveloped-signature";

const request = (id = "_r1") =>
  `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="2026-01-01T00:00:00Z"><saml:Issuer>https://sp.example.com</saml:Issuer><samlp:NameIDPolicy AllowCreate="true"/></samlp:AuthnRequest>`;

function signed(o: { c14n?: string; transforms?: string[]; digest?: string; key?: string; prefix?: string; xml?: string } = {}): string {
  const sx = new SignedXml({
    privateKey: o.key ?? sp.privateKeyPem,
    signatureAlgorithm: "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    canonicalizationAlgorithm: o.c14n ?? EXC,
  });
  sx.addReference({ xpath: "/*", digestAlgorithm: o.digest ?? "http://www.w3.org/2001/04/xmlenc#sha256", transforms: o.transforms ?? [ENV, EXC] });
  sx.computeSignature(o.xml ?? request(), { prefix: o.prefix ?? "ds", location: { reference: "/*/*[local-name(.)='Issuer']", action: "after" } });
  return sx.getSignedXml();
}

function check(xml: string, certs = [sp.certB64]) {
  const doc = parseXml(xml, "Errors.Test", "request");
  const signature = envelopedSignature(doc);
  if (!signature) throw new Error("no signature");
  return verifyEnveloped(doc, signature, certs);
}

describe("verifyEnveloped", () => {
  it("accepts exclusive and inclusive c14n, SHA-256 and SHA-512, with or without a ds prefix, and returns the root without the signature", () => {
    for (const o of [{}, { c14n: INC, transforms: [ENV, INC] }, { transforms: [ENV] }, { digest: "http://www.w3.org/2001/04/xmlenc#sha512" }, { prefix: "" }]) {
      const root = check(signed(o));
      expect([o, root?.localName]).toEqual([o, "AuthnRequest"]);
      expect(root?.getElementsByTagNameNS("http://www.w3.org/2000/09/xmldsig#", "Signature").length).toBe(0);
    }
  });

  it("refuses another key, a change after signing, SHA-1 digests, no enveloped transform, and comment-preserving c14n", () => {
    expect(check(signed(), [other.certB64])).toBeUndefined();
    expect(check(signed().replace('AllowCreate="true"', 'AllowCreate="false"'))).toBeUndefined();
    expect(check(signed().replace("https://sp.example.com</saml:Issuer>", "https://sp.example.com<!-- x --></saml:Issuer>"))).toBeDefined();
    expect(check(signed().replace("https://sp.example.com</saml:Issuer>", "https://sp.example.co<!-- x -->m.evil</saml:Issuer>"))).toBeUndefined();
    expect(check(signed({ digest: "http://www.w3.org/2000/09/xmldsig#sha1" }))).toBeUndefined();
    expect(check(signed({ transforms: [EXC] }))).toBeUndefined();
    expect(check(signed({ transforms: [ENV, `${EXC}WithComments`] }))).toBeUndefined();
    expect(check(signed({ c14n: `${EXC}WithComments` }))).toBeUndefined();
  });

  it("refuses a reference to another ID than the root's", () => {
    const xml = signed().replace('ID="_r1"', 'ID="_r2"');
    expect(check(xml)).toBeUndefined();
  });
});
