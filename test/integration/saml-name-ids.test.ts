// Per-SP NameID formats and attribute profiles (issue 29), with pysaml2 (Debian's python3, strict) as the SPs:
// the urn:oid attribute profile that pysaml2 maps to its friendly names with no configuration, a pairwise persistent
// NameID (stable per user and SP, different between SPs, not the user id), a transient one (per session), the
// AuthnRequest's NameIDPolicy honoured, and one svc cannot meet answered InvalidNameIDPolicy at the ACS.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { loginClient, type SessionRef, signIn, visit } from "../support/oidc.js";
import { type PySp, type Pysaml2, pySp, startPysaml2 } from "../support/pysaml2.js";
import { admin, type Json } from "../support/rpc.js";
import { createResponse, samlRequestOf } from "../support/saml.js";
import { formOf } from "../support/saml-idp.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let login: Machine;
let alice: string;
let aliceId: string;
let py: Pysaml2;

const OID = pySp("oid.example.com");
const PAIRWISE_1 = pySp("pairwise-1.example.com");
const PAIRWISE_2 = pySp("pairwise-2.example.com");
const DEFAULT = pySp("default.example.com");
const FORMAT = {
  email: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
  persistent: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
  transient: "urn:oasis:names:tc:SAML:2.0:nameid-format:transient",
};

beforeAll(async () => {
  t = await startTestServer();
  const orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "nameid-login-ui");
  const projectId = await project(t, orgId, "NameIDs", ["editor"]);
  aliceId = await createHuman(t, orgId, "nid-alice");
  await admin(t, "AddUserGrant", { userId: aliceId, projectId, roleKeys: ["editor"] });
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  alice = `nid-alice@${domain}`;
  py = await startPysaml2(t, projectId, [
    { sp: OID, saml: { attributeProfile: "SAML_ATTRIBUTE_PROFILE_URN_OID", roleKeys: ["editor"] } },
    { sp: PAIRWISE_1, saml: { nameIdFormat: "SAML_NAME_ID_FORMAT_PERSISTENT_PAIRWISE" } },
    { sp: PAIRWISE_2, saml: { nameIdFormat: "SAML_NAME_ID_FORMAT_PERSISTENT_PAIRWISE" } },
    { sp: DEFAULT },
  ]);
}, 180_000);
afterAll(async () => {
  py?.stop();
  await t?.stop();
});

/** The SP's AuthnRequest (with a NameIDPolicy Format when given), answered with `session`, read by pysaml2. */
async function signInAt(sp: PySp, session: SessionRef, nameIdFormat?: string): Promise<Json> {
  const req = await py.ok({ cmd: "login", sp: sp.entity, ...(nameIdFormat ? { nameIdFormat } : {}) });
  const answer = await createResponse(t, login, samlRequestOf(await visit(t, req.url)), session);
  const read = await py.ok({ cmd: "acs", sp: sp.entity, id: req.id, response: answer.post.samlResponse });
  return { ...read, xml: Buffer.from(answer.post.samlResponse, "base64").toString() };
}

describe("attribute profiles", () => {
  it("urn:oid: pysaml2's default maps give the friendly names (attrname-format:uri, FriendlyName)", async () => {
    const read = await signInAt(OID, await signIn(t, login, alice));
    expect(read.attributes).toEqual({
      uid: ["nid-alice"],
      mail: ["nid-alice@example.com"],
      givenName: ["Given"],
      sn: ["Family"],
      displayName: ["Given Family"],
      eduPersonPrincipalName: [alice],
      eduPersonEntitlement: ["editor"],
    });
    expect(read.xml).toContain(
      '<saml:Attribute FriendlyName="mail" Name="urn:oid:0.9.2342.19200300.100.1.3" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri">',
    );
    expect(read.xml).not.toContain('Name="Email"');
  });

  it("basic (the default): today's names", async () => {
    const read = await signInAt(DEFAULT, await signIn(t, login, alice));
    expect(read.attributes).toMatchObject({ UserID: [aliceId], Email: ["nid-alice@example.com"], FirstName: ["Given"] });
    expect(read).toMatchObject({ format: FORMAT.email, nameId: "nid-alice@example.com" });
  });
});

describe("NameID formats", () => {
  it("pairwise persistent: the same at one SP across sessions, another at the next SP, never the user id", async () => {
    const first = await signInAt(PAIRWISE_1, await signIn(t, login, alice));
    const again = await signInAt(PAIRWISE_1, await signIn(t, login, alice));
    const other = await signInAt(PAIRWISE_2, await signIn(t, login, alice));
    expect(first.format).toBe(FORMAT.persistent);
    expect(again.nameId).toBe(first.nameId);
    expect(other.format).toBe(FORMAT.persistent);
    expect(other.nameId).not.toBe(first.nameId);
    for (const id of [first.nameId, other.nameId]) {
      expect(id).toMatch(/^[A-Za-z0-9_-]{27}$/);
      expect(id).not.toBe(aliceId);
    }
  });

  it("NameIDPolicy transient: one id per session and SP", async () => {
    const session = await signIn(t, login, alice);
    const first = await signInAt(DEFAULT, session, FORMAT.transient);
    const sameSession = await signInAt(DEFAULT, session, FORMAT.transient);
    const nextSession = await signInAt(DEFAULT, await signIn(t, login, alice), FORMAT.transient);
    expect(first.format).toBe(FORMAT.transient);
    expect(sameSession.nameId).toBe(first.nameId);
    expect(nextSession.nameId).not.toBe(first.nameId);
    expect(first.nameId).not.toContain("nid-alice");
  });

  it("NameIDPolicy persistent and emailAddress are honoured whatever the app's format", async () => {
    const persistent = await signInAt(DEFAULT, await signIn(t, login, alice), FORMAT.persistent);
    expect(persistent.format).toBe(FORMAT.persistent);
    expect(persistent.nameId).not.toBe(aliceId);
    const email = await signInAt(PAIRWISE_1, await signIn(t, login, alice), FORMAT.email);
    expect(email).toMatchObject({ format: FORMAT.email, nameId: "nid-alice@example.com" });
  });

  it("a NameIDPolicy Format svc does not give: InvalidNameIDPolicy at the ACS, signed; pysaml2 raises it", async () => {
    const req = await py.ok({ cmd: "login", sp: DEFAULT.entity, nameIdFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:X509SubjectName" });
    const res = await visit(t, req.url);
    expect(res.status).toBe(200);
    const form = formOf(await res.text());
    expect(form.action).toBe(DEFAULT.acs);
    const xml = Buffer.from(form.fields.SAMLResponse as string, "base64").toString();
    expect(xml).toContain("urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy");
    expect(xml).toContain("<ds:Signature");
    const read = await py.call({ cmd: "acs", sp: DEFAULT.entity, id: req.id, response: form.fields.SAMLResponse });
    expect(read.error).toMatch(/InvalidNameidPolicy|InvalidNameIDPolicy/i);
  });

  it("the IdP metadata lists the transient format", async () => {
    const md = await (await fetch(`${t.url}/saml/v2/metadata`)).text();
    for (const f of Object.values(FORMAT)) expect(md).toContain(`<md:NameIDFormat>${f}</md:NameIDFormat>`);
  });
});
