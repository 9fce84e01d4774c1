// Encrypted assertions (SAML app option encryptAssertions): the Response carries an EncryptedAssertion (AES-256-GCM,
// the key under RSA-OAEP for the SP's encryption certificate from its metadata), the Assertion inside signed before it
// was encrypted. Independent SPs decrypt and verify it: xmlsec1 --decrypt with the SP's key then xmlsec1 --verify with
// the IdP certificate, @node-saml/node-saml with decryptionPvk, pysaml2 with its encryption key pair. Tampering with
// the ciphertext or the wrong key fails; an SP without an encryption certificate cannot have the option.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { loginClient, signIn, visit } from "../support/oidc.js";
import { admin, call, type Json } from "../support/rpc.js";
import {
  createResponse,
  idpCertificate,
  nodeSamlSp,
  pysaml2Request,
  pysaml2Response,
  responseXml,
  runCommand,
  samlApp,
  samlRequestOf,
  samlTempFile,
  spKeyPair,
  spMetadata,
  ssoRedirect,
  xmlsecVerify,
  xsdValid,
} from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let login: Machine;
let projectId: string;
let alice: string;
const keys = spKeyPair("encrypting-sp");
const entityId = "https://encrypted.example.com/sp";
const acs = "https://encrypted.example.com/acs";

beforeAll(async () => {
  t = await startTestServer();
  const orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "encryption-login-ui");
  projectId = await project(t, orgId, "Encrypted", []);
  await createHuman(t, orgId, "enc-alice");
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  alice = `enc-alice@${domain}`;
  await samlApp(t, projectId, "encrypted", spMetadata({ entityId, acs: [{ url: acs }], encryptionCert: keys }), { encryptAssertions: true });
}, 120_000);
afterAll(() => t?.stop());

/** A node-saml AuthnRequest answered for alice: node-saml and the Response XML. */
async function encryptedAnswer() {
  const sp = await nodeSamlSp(t, entityId, acs, { decryptionPvk: keys.privateKeyPem });
  const id = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
  const answer = await createResponse(t, login, id, await signIn(t, login, alice));
  return { sp, answer, xml: responseXml(answer) };
}

async function xmlsecDecrypt(xml: string, keyPem: string): Promise<string> {
  const file = await samlTempFile("encrypted.xml", xml);
  const key = await samlTempFile("sp.key", keyPem);
  const r = await runCommand("/usr/bin/xmlsec1", ["--decrypt", "--privkey-pem", key, "--id-attr:ID", "urn:oasis:names:tc:SAML:2.0:assertion:Assertion", file]);
  return r.stdout;
}

describe("an app with encryptAssertions", () => {
  it("shows the option and that the metadata has an encryption certificate", async () => {
    const { result } = await admin(t, "ListApplications", { projectId });
    expect(result.find((a: Json) => a.name === "encrypted").saml).toMatchObject({ encryptAssertions: true, hasEncryptionCertificate: true });
  });

  it("gets an EncryptedAssertion (AES-256-GCM, RSA-OAEP) valid against the protocol schema, nothing of the user in clear", async () => {
    const { xml } = await encryptedAnswer();
    expect(xml).toContain('<xenc:EncryptionMethod Algorithm="http://www.w3.org/2009/xmlenc11#aes256-gcm">');
    expect(xml).toContain('<xenc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p">');
    expect(xml).not.toContain("<saml:Assertion");
    expect(xml).not.toContain("enc-alice");
    expect(await xsdValid(xml, "protocol")).toMatchObject({ ok: true });
  });

  it("xmlsec1 decrypts it with the SP's key, and the assertion inside verifies with the IdP certificate", async () => {
    const { xml } = await encryptedAnswer();
    const decrypted = await xmlsecDecrypt(xml, keys.privateKeyPem);
    expect(decrypted).toContain("<saml:Assertion");
    expect(decrypted).toContain("enc-alice@example.com</saml:NameID>");
    expect(await xmlsecVerify(decrypted, await idpCertificate(t))).toBe(true);
    // The signature covers the assertion as it was encrypted: a change after decryption is caught.
    expect(await xmlsecVerify(decrypted.replace("enc-alice@example.com</saml:NameID>", "mallory@example.com</saml:NameID>"), await idpCertificate(t))).toBe(
      false,
    );
  });

  it("cannot be decrypted with another key, nor once the ciphertext is changed (GCM's tag)", async () => {
    const { xml } = await encryptedAnswer();
    await expect(xmlsecDecrypt(xml, spKeyPair("other").privateKeyPem)).rejects.toThrow();
    const values = [...xml.matchAll(/<xenc:CipherValue>([^<]+)<\/xenc:CipherValue>/g)].map((m) => m[1] as string);
    expect(values).toHaveLength(2);
    const body = Buffer.from(values[1] as string, "base64");
    body[20] = (body[20] as number) ^ 1;
    await expect(xmlsecDecrypt(xml.replace(values[1] as string, body.toString("base64")), keys.privateKeyPem)).rejects.toThrow();
  });

  it("node-saml (decryptionPvk, signed assertion required) accepts it", async () => {
    const { sp, answer } = await encryptedAnswer();
    const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: answer.post.samlResponse });
    expect(profile).toMatchObject({ nameID: "enc-alice@example.com", UserName: "enc-alice" });
  });

  it("node-saml without the right key refuses it", async () => {
    const { answer } = await encryptedAnswer();
    const wrong = await nodeSamlSp(t, entityId, acs, { decryptionPvk: spKeyPair("wrong").privateKeyPem, validateInResponseTo: "never" as never });
    await expect(wrong.validatePostResponseAsync({ SAMLResponse: answer.post.samlResponse })).rejects.toThrow();
  });

  it("pysaml2 decrypts it with its encryption key pair and accepts it", async () => {
    const pyEntity = "https://pysaml2.example.com/sp";
    await samlApp(
      t,
      projectId,
      "pysaml2-encrypted",
      spMetadata({ entityId: pyEntity, acs: [{ url: "https://pysaml2.example.com/acs" }], encryptionCert: keys }),
      {
        encryptAssertions: true,
        signResponse: true,
      },
    );
    const md = await samlTempFile("idp-metadata.xml", await (await fetch(`${t.url}/saml/v2/metadata`)).text());
    const request = await pysaml2Request(md);
    const id = samlRequestOf(await visit(t, request.url));
    const answer = await createResponse(t, login, id, await signIn(t, login, alice));
    expect(responseXml(answer)).toContain("<saml:EncryptedAssertion");
    const keyFile = await samlTempFile("py.key", keys.privateKeyPem);
    const certFile = await samlTempFile("py.crt", keys.certPem);
    const read = await pysaml2Response(md, request.id, answer.post.samlResponse, { keyFile, certFile });
    expect(read).toMatchObject({ nameId: "enc-alice@example.com", inResponseTo: request.id, attributes: { UserName: ["enc-alice"] } });
  });
});

describe("encryptAssertions is refused", () => {
  it("for an SP whose metadata has no encryption certificate (create and update)", async () => {
    const metadata = Buffer.from(spMetadata({ entityId: "https://no-enc.example.com/sp", cert: keys })).toString("base64");
    const created = await call(t, "rest", t.pat, "CreateApplication", { projectId, name: "no-enc", saml: { metadataXml: metadata, encryptAssertions: true } });
    expect(created.status).toBe(400);
    expect(JSON.stringify(created.body)).toMatch(/Errors\.App\.Saml\.Encryption\.NoCertificate/);
    expect(JSON.stringify(created.body)).toMatch(/no encryption certificate/);
    const { appId } = await admin(t, "CreateApplication", { projectId, name: "no-enc", saml: { metadataXml: metadata } });
    const updated = await call(t, "rest", t.pat, "UpdateApplication", { projectId, appId, saml: { metadataXml: metadata, encryptAssertions: true } });
    expect(updated.status).toBe(400);
    expect(JSON.stringify(updated.body)).toMatch(/Errors\.App\.Saml\.Encryption\.NoCertificate/);
  });
});
