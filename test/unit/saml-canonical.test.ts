// svc writes SAML Responses as their own exclusive canonical form (src/domain/saml/canonical.ts). Checked two
// independent ways with user data full of characters that canonicalization escapes or XML forbids: xml-crypto's
// exclusive canonicalization of the parsed Response gives back the very text (and so the digests are of the canonical
// form), and xmlsec1 verifies both the Assertion's and the Response's signatures.
import { createPrivateKey } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { DOMParser } from "@xmldom/xmldom";
import { ExclusiveCanonicalization } from "xml-crypto";
import type { UserView } from "../../src/domain/identity/users.js";
import { errorResponse, successResponse } from "../../src/domain/saml/response.js";
import type { LinkedSession } from "../../src/domain/sessions/link.js";
import { spKeyPair, xmlsecVerify } from "../support/saml.js";

const idp = spKeyPair("canonical idp");
const cert = { id: "c", pem: idp.certPem, base64: idp.certB64, privateKey: createPrivateKey(idp.privateKeyPem) };
const nasty = "A & B <c> \"d\" 'e'\t\r\nf\u0001g \u{1F600} ]]> &amp;";
const now = new Date("2026-01-02T03:04:05.678Z");
const session: LinkedSession = {
  id: "s1",
  userId: "u1",
  orgId: "o1",
  factors: { user: now, password: now, webauthnUserVerified: false },
  passwordChangeRequired: false,
  expiresAt: new Date(now.getTime() + 3_600_000),
} as LinkedSession;
const user = { id: "u1", username: `user ${nasty}`, email: null, givenName: nasty, familyName: "Ünïcødé", displayName: null } as unknown as UserView;
const answering = { requestId: "_req&<\"'", acsUrl: 'https://sp.example.com/acs?a=1&b="2"', issuer: `https://sp.example.com/${nasty}` };
const config = { nameIdFormat: "unspecified", assertionLifetimeSeconds: 300, roleKeys: [] } as never;

function canonical(xml: string): string {
  const doc = new DOMParser({
    // U+FFFD (what svc writes for characters XML forbids) is only warned about.
    onError: (level, message) => {
      if (level !== "warning") throw new Error(message);
    },
  }).parseFromString(xml, "text/xml");
  return new ExclusiveCanonicalization().process(doc.documentElement as never, {}).toString();
}

describe("canonical Responses", () => {
  it("are their own exclusive canonical form, and both signatures verify with xmlsec1", async () => {
    const xml = await successResponse(
      answering,
      { entityId: "https://idp.example.com/saml/v2/metadata", cert, signResponse: true },
      { user, session, config, roles: [nasty] },
      now,
    );
    expect(canonical(xml)).toBe(xml);
    expect(xml).toContain("A &amp; B &lt;c&gt; \"d\" 'e'\t&#xD;\nf\uFFFDg \u{1F600} ]]&gt; &amp;amp;");
    expect(await xmlsecVerify(xml, idp.certPem, "Assertion")).toBe(true);
    expect(await xmlsecVerify(xml, idp.certPem, "Response")).toBe(true);
    expect(await xmlsecVerify(xml.replace("Ünïcødé", "Unicode"), idp.certPem, "Assertion")).toBe(false);
  });

  it("error Responses too", async () => {
    const xml = await errorResponse(answering, { entityId: "https://idp.example.com/saml/v2/metadata", cert, signResponse: true }, "RequestDenied", nasty, now);
    expect(canonical(xml)).toBe(xml);
    expect(await xmlsecVerify(xml, idp.certPem, "Response")).toBe(true);
  });
});
