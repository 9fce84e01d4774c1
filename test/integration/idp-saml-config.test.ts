// IdentityProviderService's SAML providers: registering one by its metadata (posted or by URL), what is read and
// returned (svc's SP metadata URL and ACS among it), svc's SP metadata for it (schema-valid, svc's certificate), bad
// metadata and settings refused, and the same permissions as the OpenID Connect providers — with every denial tested.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { freePort } from "../support/apache.js";
import { type Machine, machine, type World, world } from "../support/fixtures.js";
import { loginClient } from "../support/oidc.js";
import { admin, fails, type Json, ok, VIAS } from "../support/rpc.js";
import { xsdValid } from "../support/saml.js";
import { type SamlifyIdp, startSamlifyIdp } from "../support/saml-idp.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let ext: SamlifyIdp;
let w: World;
let login: Machine;
let nobody: Machine;

const b64 = (s: string) => Buffer.from(s).toString("base64");
const provider = (over: Json = {}) => ({ name: "Corp SAML", metadataXml: b64(ext.metadata), options: { isLinkingAllowed: true }, ...over });
const oidcProvider = { name: "Corp OIDC", issuer: "https://sso.example.com", clientId: "c", clientSecret: "s3cret-s3cret" };

beforeAll(async () => {
  const port = await freePort();
  // The external IdP serves its metadata on loopback over http: private targets must be allowed for it.
  t = await startTestServer({ SVC_PORT: String(port), SVC_EXTERNAL_URL: `http://127.0.0.1:${port}`, SVC_SAML_METADATA_ALLOW_PRIVATE: "true" });
  ext = await startSamlifyIdp();
  w = await world(t, "samlidp");
  login = await loginClient(t, w.orgA, "samlidp-login");
  nobody = await machine(t, w.orgB, "samlidp-nobody");
}, 120_000);
afterAll(async () => {
  await ext?.close();
  await t?.stop();
});

describe("configuration", () => {
  it.each(VIAS)("adds, reads, lists, updates and deletes a SAML provider (%s)", async (via) => {
    const added = await ok(t, via, t.pat, "AddSAMLProvider", provider({ name: `Corp ${via}`, nameIdFormat: "SAML_NAME_ID_FORMAT_PERSISTENT" }));
    const got = (await ok(t, via, t.pat, "GetIdentityProvider", { idpId: added.id })).idp;
    expect(got).toMatchObject({
      id: added.id,
      name: `Corp ${via}`,
      type: "IDENTITY_PROVIDER_TYPE_SAML",
      options: { isLinkingAllowed: true },
      saml: {
        metadataXml: b64(ext.metadata),
        nameIdFormat: "SAML_NAME_ID_FORMAT_PERSISTENT",
        // The provider's metadata says WantAuthnRequestsSigned: svc signs whatever the setting.
        withSignedRequest: true,
        entityId: ext.entityId,
        spMetadataUrl: `${t.url}/idps/${added.id}/saml/metadata`,
        acsUrl: `${t.url}/idps/${added.id}/saml/acs`,
        attributeMapping: { email: "Email", givenName: "FirstName", familyName: "SurName", displayName: "FullName", preferredUsername: "UserName" },
      },
    });
    expect(got.oidc).toBeUndefined();
    const list = await ok(t, via, t.pat, "ListIdentityProviders", {});
    expect(list.result.find((p: Json) => p.id === added.id)?.type).toBe("IDENTITY_PROVIDER_TYPE_SAML");

    // Without metadata the stored one is kept.
    await ok(t, via, t.pat, "UpdateSAMLProvider", {
      idpId: added.id,
      name: "Renamed",
      binding: "SAML_BINDING_POST",
      transientMappingAttributeName: "employeeNumber",
      attributeMapping: { email: "mail" },
      options: { isCreationAllowed: true },
    });
    const updated = (await ok(t, via, t.pat, "GetIdentityProvider", { idpId: added.id })).idp;
    expect(updated).toMatchObject({
      name: "Renamed",
      options: { isCreationAllowed: true },
      saml: {
        binding: "SAML_BINDING_POST",
        transientMappingAttributeName: "employeeNumber",
        metadataXml: b64(ext.metadata),
        attributeMapping: { email: "mail", givenName: "FirstName" },
      },
    });
    await ok(t, via, t.pat, "DeleteIdentityProvider", { idpId: added.id });
    await fails(t, via, t.pat, "GetIdentityProvider", { idpId: added.id }, "not_found", "Errors.IDP.NotFound");
  });

  it("registers a provider from its metadata URL, fetched once", async () => {
    const added = await admin(t, "AddSAMLProvider", { name: "By URL", metadataUrl: ext.entityId });
    const got = (await admin(t, "GetIdentityProvider", { idpId: added.id })).idp;
    expect(Buffer.from(got.saml.metadataXml, "base64").toString()).toBe(ext.metadata);
    const gone = await fails(t, "rest", t.pat, "AddSAMLProvider", { name: "Gone", metadataUrl: `${ext.ssoUrl}/nothing-here` }, "invalid_argument");
    expect(gone.reason).toBe("Errors.IDP.Saml.MetadataUrl.Unavailable");
    expect(gone.body.message).toMatch(/^metadata_url: answered 400/);
    await fails(
      t,
      "rest",
      t.pat,
      "AddSAMLProvider",
      { name: "Plain", metadataUrl: "http://idp.example.com/metadata" },
      "invalid_argument",
      "Errors.IDP.Saml.MetadataUrl.Invalid",
    );
  });

  it("refuses bad metadata and settings with InvalidArgument", async () => {
    const onlyRedirect = ext.metadata.replace(/<SingleSignOnService[^>]*HTTP-POST[^>]*>(<\/SingleSignOnService>)?/, "");
    expect(onlyRedirect).not.toBe(ext.metadata);
    const bad: [Json, string][] = [
      [{ metadataXml: "" }, "Errors.IDP.Saml.Metadata.Missing"],
      [{ metadataXml: b64(`<!DOCTYPE x [<!ENTITY e "e">]>${ext.metadata.replace(/^<\?xml[^>]*\?>/, "")}`) }, "Errors.IDP.Saml.Metadata.Invalid"],
      [{ metadataXml: b64("<not-xml") }, "Errors.IDP.Saml.Metadata.Invalid"],
      [{ metadataXml: b64(ext.metadata.replace(/<(\w+:)?KeyDescriptor[\s\S]*?<\/(\w+:)?KeyDescriptor>/g, "")) }, "Errors.IDP.Saml.Metadata.Invalid"],
      [{ metadataXml: b64(ext.metadata.replace(/IDPSSODescriptor/g, "SPSSODescriptor")) }, "Errors.IDP.Saml.Metadata.Invalid"],
      [{ metadataXml: b64(ext.metadata.replace(/Location="http:\/\/127\.0\.0\.1/g, 'Location="http://idp.example.com')) }, "Errors.IDP.Saml.Metadata.Invalid"],
      [{ metadataXml: b64(onlyRedirect), binding: "SAML_BINDING_POST" }, "Errors.IDP.Saml.Binding.Unavailable"],
      [{ nameIdFormat: "SAML_NAME_ID_FORMAT_TRANSIENT" }, "Errors.IDP.Saml.MappingAttribute.Missing"],
      [{ transientMappingAttributeName: "has space" }, "Errors.IDP.Saml.MappingAttribute.Invalid"],
      [{ name: "" }, "Errors.IDP.Name.Missing"],
      [{ attributeMapping: { email: "bad name!" } }, "Errors.IDP.ClaimMapping.Invalid"],
    ];
    for (const [over, reason] of bad) await fails(t, "connect", t.pat, "AddSAMLProvider", provider(over), "invalid_argument", reason);
  });

  it("keeps the two kinds apart: an OIDC update of a SAML provider and the reverse are refused", async () => {
    const saml = (await admin(t, "AddSAMLProvider", provider())).id;
    const oidcId = (await admin(t, "AddGenericOIDCProvider", oidcProvider)).id;
    await fails(t, "rest", t.pat, "UpdateGenericOIDCProvider", { ...oidcProvider, idpId: saml }, "failed_precondition", "Errors.IDP.TypeMismatch");
    await fails(
      t,
      "rest",
      t.pat,
      "UpdateSAMLProvider",
      { idpId: oidcId, name: "x", metadataXml: b64(ext.metadata) },
      "failed_precondition",
      "Errors.IDP.TypeMismatch",
    );
    const res = await fetch(`${t.url}/idps/${oidcId}/saml/metadata`);
    expect(res.status).toBe(404);
  });
});

describe("svc's SP metadata for a provider", () => {
  it("is schema-valid, names svc's entity id, ACS and SAML signing certificate", async () => {
    const id = (await admin(t, "AddSAMLProvider", provider({ nameIdFormat: "SAML_NAME_ID_FORMAT_EMAIL_ADDRESS" }))).id;
    const res = await fetch(`${t.url}/idps/${id}/saml/metadata`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/samlmetadata+xml; charset=utf-8");
    const xml = await res.text();
    const valid = await xsdValid(xml, "metadata");
    expect(valid).toEqual({ ok: true, output: expect.any(String) });
    expect(xml).toContain(`entityID="${t.url}/idps/${id}/saml/metadata"`);
    expect(xml).toContain(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${t.url}/idps/${id}/saml/acs"`);
    expect(xml).toContain('AuthnRequestsSigned="true"');
    expect(xml).toContain("<md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>");
    const cert = (await (await fetch(`${t.url}/saml/v2/certificate`)).text()).replace(/-----[^-]+-----|\s/g, "");
    expect(xml).toContain(`<ds:X509Certificate>${cert}</ds:X509Certificate>`);
    expect((await fetch(`${t.url}/idps/${id}/saml/metadata`, { method: "HEAD" })).status).toBe(200);
    expect((await fetch(`${t.url}/idps/${id}/saml/metadata`, { method: "POST" })).status).toBe(405);
    expect((await fetch(`${t.url}/idps/${id}/saml/acs`)).status).toBe(405);
    expect((await fetch(`${t.url}/idps/unknown-idp/saml/metadata`)).status).toBe(404);
    const form = await fetch(`${t.url}/idps/${id}/saml/acs`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(form.status).toBe(415);
  });
});

describe("permissions (the same as OpenID Connect providers)", () => {
  it("an organization owner manages its organization's SAML providers only", async () => {
    const instanceIdp = (await admin(t, "AddSAMLProvider", provider())).id;
    const orgAIdp = (await ok(t, "rest", w.ownerA.pat, "AddSAMLProvider", provider({ organizationId: w.orgA }))).id;
    await ok(t, "rest", w.ownerA.pat, "UpdateSAMLProvider", { idpId: orgAIdp, name: "A's own" });
    await fails(t, "rest", w.ownerA.pat, "AddSAMLProvider", provider(), "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", w.ownerA.pat, "UpdateSAMLProvider", { idpId: instanceIdp, name: "x" }, "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", w.ownerB.pat, "UpdateSAMLProvider", { idpId: orgAIdp, name: "x" }, "not_found", "Errors.IDP.NotFound");
    await fails(t, "rest", w.ownerB.pat, "AddSAMLProvider", provider({ organizationId: w.orgA }), "not_found", "Errors.Org.NotFound");
  });

  it("a user manager, an auditor, a user without a role and a login client change nothing", async () => {
    const orgAIdp = (await admin(t, "AddSAMLProvider", provider({ organizationId: w.orgA }))).id;
    for (const caller of [w.userManagerA, w.auditorA, w.plainA, login]) {
      await fails(t, "rest", caller.pat, "AddSAMLProvider", provider({ organizationId: w.orgA }), "permission_denied", "Errors.Permission.Denied");
      await fails(t, "rest", caller.pat, "AddSAMLProvider", provider(), "permission_denied", "Errors.Permission.Denied");
    }
    for (const caller of [w.userManagerA, w.auditorA, login]) {
      await fails(t, "rest", caller.pat, "UpdateSAMLProvider", { idpId: orgAIdp, name: "x" }, "permission_denied", "Errors.Permission.Denied");
    }
    await fails(t, "rest", w.plainA.pat, "UpdateSAMLProvider", { idpId: orgAIdp, name: "x" }, "not_found", "Errors.IDP.NotFound");
    await fails(t, "rest", nobody.pat, "UpdateSAMLProvider", { idpId: orgAIdp, name: "x" }, "not_found", "Errors.IDP.NotFound");
    await fails(t, "rest", undefined, "AddSAMLProvider", provider(), "unauthenticated");
    expect((await admin(t, "GetIdentityProvider", { idpId: orgAIdp })).idp.name).toBe("Corp SAML");
  });
});
