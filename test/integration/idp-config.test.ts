// IdentityProviderService (generic OIDC providers of the instance or an organization) and the users' IdP links: what
// is stored and returned (never the client secret, sealed at rest), validation, and who may do what.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, type Machine, machine, type World, world } from "../support/fixtures.js";
import { loginClient, signIn } from "../support/oidc.js";
import { admin, fails, type Json, ok, VIAS } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { humanToken } from "../support/users.js";

let t: TestServer;
let w: World;
let login: Machine;
let nobody: Machine;

const SECRET = "provider-client-secret-0123456789";

const provider = (over: Json = {}) => ({
  name: "Corp SSO",
  issuer: "https://sso.example.com",
  clientId: "svc-client",
  clientSecret: SECRET,
  options: { isLinkingAllowed: true },
  ...over,
});

beforeAll(async () => {
  t = await startTestServer();
  w = await world(t, "idp");
  login = await loginClient(t, w.orgA, "idp-login");
  nobody = await machine(t, w.orgB, "idp-nobody");
}, 120_000);
afterAll(() => t?.stop());

describe("configuration", () => {
  it.each(VIAS)("adds, reads, lists, updates and deletes a provider without ever returning its secret (%s)", async (via) => {
    const added = await ok(t, via, t.pat, "AddGenericOIDCProvider", provider({ name: `Corp ${via}` }));
    expect(added.id).toEqual(expect.any(String));
    const got = await ok(t, via, t.pat, "GetIdentityProvider", { idpId: added.id });
    expect(JSON.stringify(got)).not.toContain(SECRET);
    expect(got.idp).toMatchObject({
      id: added.id,
      name: `Corp ${via}`,
      type: "IDENTITY_PROVIDER_TYPE_OIDC",
      options: { isLinkingAllowed: true },
      oidc: {
        issuer: "https://sso.example.com",
        clientId: "svc-client",
        scopes: ["openid", "profile", "email"],
        claimMapping: { email: "email", emailVerified: "email_verified", givenName: "given_name", displayName: "name" },
      },
    });
    expect(got.idp.organizationId ?? "").toBe("");

    // Sealed at rest: the row holds no plaintext, and an update without a secret keeps it.
    const before = await t.server.db.prisma.identityProvider.findUniqueOrThrow({ where: { id: added.id } });
    expect(Buffer.from(before.clientSecretEnc).includes(Buffer.from(SECRET))).toBe(false);
    expect(before.clientSecretEnc.length).toBeGreaterThan(SECRET.length);
    await ok(t, via, t.pat, "UpdateGenericOIDCProvider", {
      ...provider({ clientSecret: "", name: "Renamed", scopes: ["openid", "groups"] }),
      idpId: added.id,
      claimMapping: { email: "mail", emailVerified: "mail_ok" },
      options: { autoLinking: "AUTO_LINKING_OPTION_EMAIL", isAutoCreation: true, isCreationAllowed: true },
    });
    const kept = await t.server.db.prisma.identityProvider.findUniqueOrThrow({ where: { id: added.id } });
    expect(Buffer.from(kept.clientSecretEnc).equals(Buffer.from(before.clientSecretEnc))).toBe(true);
    const updated = (await ok(t, via, t.pat, "GetIdentityProvider", { idpId: added.id })).idp;
    expect(updated).toMatchObject({
      name: "Renamed",
      options: { autoLinking: "AUTO_LINKING_OPTION_EMAIL", isAutoCreation: true, isCreationAllowed: true },
      oidc: { scopes: ["openid", "groups"], claimMapping: { email: "mail", emailVerified: "mail_ok", givenName: "given_name" } },
    });
    await ok(t, via, t.pat, "UpdateGenericOIDCProvider", { ...provider({ clientSecret: "another-secret" }), idpId: added.id });
    const changed = await t.server.db.prisma.identityProvider.findUniqueOrThrow({ where: { id: added.id } });
    expect(Buffer.from(changed.clientSecretEnc).equals(Buffer.from(before.clientSecretEnc))).toBe(false);

    const list = await ok(t, via, t.pat, "ListIdentityProviders", {});
    expect(list.result.map((p: Json) => p.id)).toContain(added.id);
    expect(JSON.stringify(list)).not.toContain(SECRET);
    await ok(t, via, t.pat, "DeleteIdentityProvider", { idpId: added.id });
    await fails(t, via, t.pat, "GetIdentityProvider", { idpId: added.id }, "not_found", "Errors.IDP.NotFound");
  });

  it("refuses bad input with InvalidArgument", async () => {
    const bad: [Json, string][] = [
      [{ issuer: "http://sso.example.com" }, "Errors.IDP.Issuer.Insecure"],
      [{ issuer: "not a url" }, "Errors.IDP.Issuer.Invalid"],
      [{ issuer: "https://sso.example.com/?x=1" }, "Errors.IDP.Issuer.Invalid"],
      [{ clientSecret: "" }, "Errors.IDP.ClientSecret.Missing"],
      [{ clientId: " " }, "Errors.IDP.ClientId.Missing"],
      [{ name: "" }, "Errors.IDP.Name.Missing"],
      [{ scopes: ["open id"] }, "Errors.IDP.Scopes.Invalid"],
      [{ claimMapping: { email: "a b" } }, "Errors.IDP.ClaimMapping.Invalid"],
    ];
    for (const [over, reason] of bad) await fails(t, "connect", t.pat, "AddGenericOIDCProvider", provider(over), "invalid_argument", reason);
    // http is fine on a loopback host (a provider on the same machine).
    for (const issuer of ["http://127.0.0.1:9", "http://localhost:9/realm", "http://[::1]:9"]) {
      await ok(t, "connect", t.pat, "AddGenericOIDCProvider", provider({ issuer }));
    }
  });
});

describe("who may configure and read providers", () => {
  let instanceIdp: string;
  let orgAIdp: string;

  beforeAll(async () => {
    instanceIdp = (await admin(t, "AddGenericOIDCProvider", provider({ name: "Instance SSO" }))).id;
    orgAIdp = (await ok(t, "rest", w.ownerA.pat, "AddGenericOIDCProvider", provider({ name: "A's SSO", organizationId: w.orgA }))).id;
  });

  it("an organization owner manages its organization's providers only", async () => {
    const a = await ok(t, "rest", w.ownerA.pat, "GetIdentityProvider", { idpId: orgAIdp });
    expect(a.idp.organizationId).toBe(w.orgA);
    await fails(t, "rest", w.ownerA.pat, "AddGenericOIDCProvider", provider(), "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", w.ownerA.pat, "UpdateGenericOIDCProvider", { ...provider(), idpId: instanceIdp }, "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", w.ownerA.pat, "DeleteIdentityProvider", { idpId: instanceIdp }, "permission_denied", "Errors.Permission.Denied");
    // Another organization's owner: A's provider does not exist for it.
    await fails(t, "rest", w.ownerB.pat, "GetIdentityProvider", { idpId: orgAIdp }, "not_found", "Errors.IDP.NotFound");
    await fails(t, "rest", w.ownerB.pat, "DeleteIdentityProvider", { idpId: orgAIdp }, "not_found", "Errors.IDP.NotFound");
    await fails(t, "rest", w.ownerB.pat, "AddGenericOIDCProvider", provider({ organizationId: w.orgA }), "not_found", "Errors.Org.NotFound");
    await fails(t, "rest", w.ownerB.pat, "ListIdentityProviders", { organizationId: w.orgA }, "not_found", "Errors.Org.NotFound");
    // Both read the instance's providers; A's owner lists A's own besides.
    await ok(t, "rest", w.ownerB.pat, "GetIdentityProvider", { idpId: instanceIdp });
    const listA = (await ok(t, "rest", w.ownerA.pat, "ListIdentityProviders", { organizationId: w.orgA })).result.map((p: Json) => p.id);
    expect(listA).toEqual(expect.arrayContaining([instanceIdp, orgAIdp]));
    const listB = (await ok(t, "rest", w.ownerB.pat, "ListIdentityProviders", { organizationId: w.orgB })).result.map((p: Json) => p.id);
    expect(listB).toContain(instanceIdp);
    expect(listB).not.toContain(orgAIdp);
  });

  it("a user manager, an auditor and a user without a role change nothing", async () => {
    for (const caller of [w.userManagerA, w.auditorA]) {
      await fails(t, "rest", caller.pat, "AddGenericOIDCProvider", provider({ organizationId: w.orgA }), "permission_denied", "Errors.Permission.Denied");
      await fails(t, "rest", caller.pat, "DeleteIdentityProvider", { idpId: orgAIdp }, "permission_denied", "Errors.Permission.Denied");
    }
    // A user of A without a role is refused by the interceptor, or does not see A's provider at all.
    await fails(t, "rest", w.plainA.pat, "AddGenericOIDCProvider", provider({ organizationId: w.orgA }), "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", w.plainA.pat, "DeleteIdentityProvider", { idpId: orgAIdp }, "not_found", "Errors.IDP.NotFound");
    // The auditor reads (idp.read); the others hold no idp.read anywhere.
    await ok(t, "rest", w.auditorA.pat, "GetIdentityProvider", { idpId: orgAIdp });
    await fails(t, "rest", w.plainA.pat, "ListIdentityProviders", {}, "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", nobody.pat, "GetIdentityProvider", { idpId: instanceIdp }, "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", nobody.pat, "GetIdentityProvider", { idpId: orgAIdp }, "not_found", "Errors.IDP.NotFound");
  });

  it("a login client reads every provider (to show its button) and changes none", async () => {
    await ok(t, "rest", login.pat, "GetIdentityProvider", { idpId: orgAIdp });
    const list = (await ok(t, "rest", login.pat, "ListIdentityProviders", { organizationId: w.orgA, query: { limit: 1 } })) as Json;
    expect(list.result).toHaveLength(1);
    expect(Number(list.details.totalResult)).toBeGreaterThanOrEqual(2);
    await fails(t, "rest", login.pat, "AddGenericOIDCProvider", provider(), "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", login.pat, "UpdateGenericOIDCProvider", { ...provider(), idpId: orgAIdp }, "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", login.pat, "DeleteIdentityProvider", { idpId: orgAIdp }, "permission_denied", "Errors.Permission.Denied");
  });
});

describe("IdP links", () => {
  let idp: string;
  let strictIdp: string;
  let userId: string;

  beforeAll(async () => {
    idp = (await admin(t, "AddGenericOIDCProvider", provider({ name: "Links SSO" }))).id;
    strictIdp = (await admin(t, "AddGenericOIDCProvider", provider({ name: "No linking", options: {} }))).id;
    userId = await createHuman(t, w.orgA, "linked-user");
  });

  const link = (idpId: string, externalId: string) => ({ userId, idpLink: { idpId, userId: externalId, userName: `${externalId}@sso` } });

  it("an administrator links, lists and unlinks; one account at a provider has one user", async () => {
    await ok(t, "rest", w.userManagerA.pat, "AddIDPLink", link(idp, "ext-1"));
    await fails(t, "rest", t.pat, "AddIDPLink", link(idp, "ext-1"), "already_exists", "Errors.User.IDPLink.AlreadyExists");
    const list = await ok(t, "rest", w.auditorA.pat, "ListIDPLinks", { userId });
    expect(list.result).toEqual([{ idpId: idp, userId: "ext-1", userName: "ext-1@sso" }]);
    expect((await admin(t, "ListAuthenticationMethodTypes", { userId })).authMethodTypes).toEqual([
      "AUTHENTICATION_METHOD_TYPE_PASSWORD",
      "AUTHENTICATION_METHOD_TYPE_IDP",
    ]);
    await ok(t, "rest", w.ownerA.pat, "RemoveIDPLink", { userId, idpId: idp, linkedUserId: "ext-1" });
    await fails(t, "rest", w.ownerA.pat, "RemoveIDPLink", { userId, idpId: idp, linkedUserId: "ext-1" }, "not_found", "Errors.User.IDPLink.NotFound");
    expect((await ok(t, "rest", w.auditorA.pat, "ListIDPLinks", { userId })).result ?? []).toEqual([]);
  });

  it("the user links itself where the provider allows it", async () => {
    // Linking an external account binds an authenticator: only through the user's own sign-in, not a bare token.
    await fails(t, "rest", await humanToken(t, userId), "AddIDPLink", link(idp, "self-0"), "permission_denied", "Errors.Session.ProofRequired");
    const own = await humanToken(t, userId, { signedIn: true });
    await ok(t, "rest", own, "AddIDPLink", link(idp, "self-1"));
    await fails(t, "rest", own, "AddIDPLink", link(strictIdp, "self-2"), "failed_precondition", "Errors.IDP.LinkingNotAllowed");
    expect((await ok(t, "rest", own, "ListIDPLinks", { userId })).result).toHaveLength(1);
    await ok(t, "rest", own, "RemoveIDPLink", { userId, idpId: idp, linkedUserId: "self-1" });
  });

  it("others may not: an auditor, another organization, a login client without a recent sign-in of the user", async () => {
    await fails(t, "rest", w.auditorA.pat, "AddIDPLink", link(idp, "x"), "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", w.ownerB.pat, "AddIDPLink", link(idp, "x"), "not_found", "Errors.User.NotFound");
    await fails(t, "rest", w.ownerB.pat, "ListIDPLinks", { userId }, "not_found", "Errors.User.NotFound");
    await fails(t, "rest", login.pat, "AddIDPLink", link(idp, "x"), "permission_denied", "Errors.Session.ProofRequired");
    await fails(t, "rest", w.plainA.pat, "RemoveIDPLink", { userId, idpId: idp, linkedUserId: "x" }, "not_found", "Errors.User.NotFound");
  });

  it("a login client links the user of the session it presents, signed in a moment ago", async () => {
    const domain = (await admin(t, "GetOrganizationByID", { organizationId: w.orgA })).organization.primaryDomain;
    const session = await signIn(t, login, `linked-user@${domain}`);
    // The sign-in counts only when presented.
    await fails(t, "rest", login.pat, "AddIDPLink", link(idp, "via-login"), "permission_denied", "Errors.Session.ProofRequired");
    await ok(t, "rest", login.pat, "AddIDPLink", { ...link(idp, "via-login"), session });
    await ok(t, "rest", login.pat, "RemoveIDPLink", { userId, idpId: idp, linkedUserId: "via-login", session });
    // Ten minutes later the sign-in no longer counts.
    t.advanceClock(11 * 60_000);
    await fails(t, "rest", login.pat, "AddIDPLink", { ...link(idp, "via-login"), session }, "failed_precondition", "Errors.Session.RecentProofRequired");
  });

  it("deleting a provider deletes its links", async () => {
    const gone = (await admin(t, "AddGenericOIDCProvider", provider({ name: "Short-lived" }))).id;
    await admin(t, "AddIDPLink", link(gone, "ext-gone"));
    await admin(t, "DeleteIdentityProvider", { idpId: gone });
    expect(await t.server.db.prisma.idpLink.count({ where: { idpId: gone } })).toBe(0);
    await fails(t, "rest", t.pat, "AddIDPLink", link(gone, "ext-gone"), "not_found", "Errors.IDP.NotFound");
  });
});
