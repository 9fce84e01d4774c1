// samlify (2.13) as a service provider of svc's IdP: a ServiceProvider built from the very SP metadata registered with
// svc (WantAssertionsSigned, its signing and encryption keys), an IdentityProvider from svc's /saml/v2/metadata. It
// sends AuthnRequests over HTTP-Redirect and HTTP-POST, unsigned and signed, through /saml/v2/SSO; the login UI answers
// with SAMLService; samlify's parseLoginResponse must accept the Response (signature with the metadata's certificate,
// issuer, audience, time window, schema) and expose the attributes, and refuse a tampered one.
//
// samlify refuses to run without a schema validator (setSchemaValidator): this one runs Debian's
// `xmllint --schema saml-schema-protocol-2.0.xsd` with the OASIS XSDs (opensaml-schemas, xmltooling-schemas), as the
// other SAML tests do, so the schema check is the same independent one and works offline.
import { createRequire } from "node:module";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { loginClient, signIn } from "../support/oidc.js";
import { admin, type Json } from "../support/rpc.js";
import { createResponse, type KeyPair, responseXml, samlApp, samlRequestOf, spKeyPair, spMetadata, ssoPost, ssoRedirect, xsdValid } from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

// samlify's declarations pull in TypeScript's "dom" library (through its own copy of xmldom's), which would change
// fetch's types for the whole project: it is loaded untyped, and the little used here is declared.
interface SamlifySp {
  createLoginRequest(idp: object, binding: "redirect" | "post"): { id: string; context: string; relayState?: string };
  parseLoginResponse(idp: object, binding: "post", request: { body: Record<string, string> }): Promise<{ extract: Json }>;
}
interface Samlify {
  setSchemaValidator(v: { validate(xml: string): Promise<string> }): void;
  ServiceProvider(settings: Json): SamlifySp;
  IdentityProvider(settings: Json): object;
}
const samlify = createRequire(import.meta.url)("samlify") as Samlify;

samlify.setSchemaValidator({
  validate: async (xml: string) => {
    const r = await xsdValid(xml, "protocol");
    if (!r.ok) throw new Error(`not valid against saml-schema-protocol-2.0.xsd: ${r.output}`);
    return "valid";
  },
});

interface World {
  t: TestServer;
  login: Machine;
  projectId: string;
  alice: string;
  aliceId: string;
}

async function world(env: Record<string, string> = {}): Promise<World> {
  const t = await startTestServer(env);
  const orgId = await defaultOrgId(t);
  const login = await loginClient(t, orgId, "samlify-login-ui");
  const projectId = await project(t, orgId, "samlify", ["reader", "writer"]);
  const aliceId = await createHuman(t, orgId, "samlify-alice");
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  await admin(t, "AddUserGrant", { userId: aliceId, projectId, roleKeys: ["reader"] });
  return { t, login, projectId, alice: `samlify-alice@${domain}`, aliceId };
}

let plain: World;
let signing: World;
const signingKeys = spKeyPair("samlify-signing");
const encryptionKeys = spKeyPair("samlify-encryption");

beforeAll(async () => {
  plain = await world();
  // An IdP whose metadata says WantAuthnRequestsSigned="true": samlify refuses to sign requests for one that does not.
  signing = await world({ SVC_SAML_WANT_AUTHN_REQUESTS_SIGNED: "true" });
}, 180_000);
afterAll(async () => {
  await Promise.all([plain?.t.stop(), signing?.t.stop()]);
});

interface Sp {
  sp: SamlifySp;
  idp: object;
  entityId: string;
  acs: string;
}

let spNo = 0;
/** Registers an SP with svc by its metadata and builds samlify's SP from the same metadata. */
async function registerSp(w: World, o: { signed?: KeyPair; encrypt?: boolean; saml?: Json } = {}): Promise<Sp> {
  const host = `samlify-${++spNo}.example.com`;
  const entityId = `https://${host}/sp`;
  const acs = `https://${host}/acs`;
  const metadata = spMetadata({
    entityId,
    acs: [{ url: acs, isDefault: true }],
    cert: o.signed,
    authnRequestsSigned: !!o.signed,
    encryptionCert: o.encrypt ? encryptionKeys : undefined,
  });
  await samlApp(w.t, w.projectId, host, metadata, { roleKeys: ["reader"], ...(o.encrypt ? { encryptAssertions: true } : {}), ...o.saml });
  const sp = samlify.ServiceProvider({
    metadata,
    ...(o.signed ? { privateKey: o.signed.privateKeyPem } : {}),
    ...(o.encrypt ? { encPrivateKey: encryptionKeys.privateKeyPem, isAssertionEncrypted: true } : {}),
    wantAssertionsSigned: true,
    clockDrifts: [-10_000, 10_000],
  });
  // samlify reads "the IdP encrypts" from the IdP's settings, not the SP's.
  const idp = samlify.IdentityProvider({ metadata: await (await fetch(`${w.t.url}/saml/v2/metadata`)).text(), isAssertionEncrypted: !!o.encrypt });
  return { sp, idp, entityId, acs };
}

/** samlify's AuthnRequest over `binding` through /saml/v2/SSO: the stored request's id and samlify's request ID. */
async function send(w: World, s: Sp, binding: "redirect" | "post"): Promise<{ samlRequestId: string; requestId: string }> {
  if (binding === "redirect") {
    const { id, context } = s.sp.createLoginRequest(s.idp, "redirect");
    return { samlRequestId: samlRequestOf(await ssoRedirect(w.t, context)), requestId: id };
  }
  const { id, context, relayState } = s.sp.createLoginRequest(s.idp, "post");
  const res = await ssoPost(w.t, { SAMLRequest: context, ...(relayState ? { RelayState: relayState } : {}) });
  return { samlRequestId: samlRequestOf(res), requestId: id };
}

async function loginThrough(w: World, s: Sp, binding: "redirect" | "post") {
  const { samlRequestId, requestId } = await send(w, s, binding);
  const answer = await createResponse(w.t, w.login, samlRequestId, await signIn(w.t, w.login, w.alice));
  expect(answer.url).toBe(s.acs);
  const parsed = await s.sp.parseLoginResponse(s.idp, "post", { body: { SAMLResponse: answer.post.samlResponse } });
  return { parsed, requestId, answer };
}

function expectAlice(w: World, s: Sp, extract: Json, requestId: string) {
  expect(extract.nameID).toBe("samlify-alice@example.com");
  expect(extract.response.inResponseTo).toBe(requestId);
  // samlify does not check the audience itself: an SP using it must, as here.
  expect(extract.audience).toBe(s.entityId);
  expect(extract.attributes).toMatchObject({ UserID: w.aliceId, UserName: "samlify-alice", Email: "samlify-alice@example.com", Roles: "reader" });
}

describe.each(["redirect", "post"] as const)("samlify's unsigned AuthnRequest over HTTP-%s", (binding) => {
  it("gets a Response that samlify's parseLoginResponse accepts, with the attributes", async () => {
    const s = await registerSp(plain);
    const { parsed, requestId } = await loginThrough(plain, s, binding);
    expectAlice(plain, s, parsed.extract, requestId);
  });
});

describe.each(["redirect", "post"] as const)("samlify's signed AuthnRequest over HTTP-%s", (binding) => {
  it("is verified with the registered certificate and answered with a Response samlify accepts", async () => {
    const s = await registerSp(signing, { signed: signingKeys, saml: { signResponse: true } });
    const { parsed, requestId } = await loginThrough(signing, s, binding);
    expectAlice(signing, s, parsed.extract, requestId);
  });

  it("is refused when signed with another key than the registered one", async () => {
    const s = await registerSp(signing, { signed: signingKeys });
    const impostor = samlify.ServiceProvider({
      metadata: spMetadata({ entityId: s.entityId, acs: [{ url: s.acs }], cert: spKeyPair("impostor"), authnRequestsSigned: true }),
      privateKey: spKeyPair("impostor-key").privateKeyPem,
    });
    const res =
      binding === "redirect"
        ? await ssoRedirect(signing.t, impostor.createLoginRequest(s.idp, "redirect").context)
        : await ssoPost(signing.t, { SAMLRequest: impostor.createLoginRequest(s.idp, "post").context });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/signature does not verify/);
  });
});

describe("samlify refuses what it must", () => {
  it("a Response whose assertion was changed after signing", async () => {
    const s = await registerSp(plain);
    const { samlRequestId } = await send(plain, s, "post");
    const answer = await createResponse(plain.t, plain.login, samlRequestId, await signIn(plain.t, plain.login, plain.alice));
    const tampered = responseXml(answer).replace("samlify-alice@example.com</saml:NameID>", "mallory@example.com</saml:NameID>");
    expect(tampered).not.toBe(responseXml(answer));
    await expect(s.sp.parseLoginResponse(s.idp, "post", { body: { SAMLResponse: Buffer.from(tampered).toString("base64") } })).rejects.toBeDefined();
  });
});

describe("encrypted assertions", () => {
  it("samlify decrypts the EncryptedAssertion (AES-256-GCM, RSA-OAEP) with the SP's key and verifies the assertion inside", async () => {
    const s = await registerSp(plain, { encrypt: true });
    const { parsed, requestId, answer } = await loginThrough(plain, s, "redirect");
    const xml = responseXml(answer);
    expect(xml).toContain("<saml:EncryptedAssertion");
    expect(xml).not.toContain("<saml:Assertion");
    expect(xml).not.toContain("samlify-alice");
    expectAlice(plain, s, parsed.extract, requestId);
  });
});
