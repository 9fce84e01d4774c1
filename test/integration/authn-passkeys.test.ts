// Passkeys through the real server with a software authenticator (test/support/webauthn.ts): RegisterPasskey's
// creation options answered as a browser would, VerifyPasskeyRegistration checking challenge, origin and relying
// party, ListPasskeys, RemovePasskey; existing credentials excluded; the login settings; who may do it.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { setLogin, withRoles } from "../support/authn.js";
import { admin, fails, ok, VIAS } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { type Caller, createHuman, createMachine, createOrg, humanToken, userCallers } from "../support/users.js";
import { SoftAuthenticator } from "../support/webauthn.js";

const EXTERNAL = "https://id.example.test";
let t: TestServer;
let orgId: string;
let nobody: Caller;
let auditor: Caller;
let manager: Caller;
let foreignManager: Caller;

beforeAll(async () => {
  t = await startTestServer({ SVC_EXTERNAL_URL: EXTERNAL });
  ({ orgId, nobody, auditor, manager, foreignManager } = await userCallers(t));
});
afterAll(() => t.stop());

async function register(token: string, userId: string, key: SoftAuthenticator, name = "Laptop", domain?: string) {
  const start = await ok(t, "rest", token, "RegisterPasskey", { userId, ...(domain ? { domain } : {}) });
  const credential = key.register(start.publicKeyCredentialCreationOptions);
  await ok(t, "rest", token, "VerifyPasskeyRegistration", { userId, passkeyId: start.passkeyId, publicKeyCredential: credential, passkeyName: name });
  return start.passkeyId as string;
}

describe("registering passkeys", () => {
  it.each(VIAS)("registers with the software authenticator and lists it (%s)", async (via) => {
    const id = await createHuman(t, orgId, `passkey-${via}`);
    const token = await humanToken(t, id, { signedIn: true });
    const start = await ok(t, via, token, "RegisterPasskey", { userId: id, authenticator: "PASSKEY_AUTHENTICATOR_PLATFORM" });
    const options = start.publicKeyCredentialCreationOptions;
    expect(options).toMatchObject({
      rp: { id: "id.example.test", name: "svc" },
      user: { name: `passkey-${via}@default.id.example.test`, displayName: "Given Family" },
      attestation: "none",
      authenticatorSelection: { residentKey: "required", userVerification: "required", authenticatorAttachment: "platform" },
      excludeCredentials: [],
    });
    expect(Buffer.from(options.user.id, "base64url").toString()).toBe(id);
    expect((await ok(t, via, token, "ListPasskeys", { userId: id })).result).toEqual([
      expect.objectContaining({ id: start.passkeyId, state: "AUTH_FACTOR_STATE_NOT_READY" }),
    ]);
    const key = new SoftAuthenticator();
    await ok(t, via, token, "VerifyPasskeyRegistration", {
      userId: id,
      passkeyId: start.passkeyId,
      publicKeyCredential: key.register(options),
      passkeyName: "My laptop",
    });
    const list = await ok(t, via, token, "ListPasskeys", { userId: id });
    expect(list.result).toEqual([expect.objectContaining({ id: start.passkeyId, name: "My laptop", state: "AUTH_FACTOR_STATE_READY" })]);
    expect(list.details.totalResult).toBe("1");
    expect((await ok(t, via, token, "ListAuthenticationMethodTypes", { userId: id })).authMethodTypes).toContain("AUTHENTICATION_METHOD_TYPE_PASSKEY");
    const row = await t.server.db.prisma.passkey.findUniqueOrThrow({ where: { id: start.passkeyId } });
    expect(row).toMatchObject({ credentialId: key.id, rpId: "id.example.test", challenge: null, counter: 1n });
    // The same registration again: already done (asked by a sign-in that proved the account's password and key).
    await fails(
      t,
      via,
      await humanToken(t, id, { signedIn: true, factors: ["password", "webauthn"] }),
      "VerifyPasskeyRegistration",
      { userId: id, passkeyId: start.passkeyId, publicKeyCredential: key.register(options), passkeyName: "x" },
      "failed_precondition",
      "Errors.User.Passkey.AlreadyReady",
    );
  });

  it("excludes the user's registered credentials, and refuses the same authenticator twice", async () => {
    const id = await createHuman(t, orgId, "twice");
    const key = new SoftAuthenticator();
    await register(t.pat, id, key);
    const start = await admin(t, "RegisterPasskey", { userId: id });
    expect(start.publicKeyCredentialCreationOptions.excludeCredentials).toEqual([{ id: key.id, type: "public-key", transports: ["internal"] }]);
    await fails(
      t,
      "rest",
      t.pat,
      "VerifyPasskeyRegistration",
      { userId: id, passkeyId: start.passkeyId, publicKeyCredential: key.register(start.publicKeyCredentialCreationOptions), passkeyName: "again" },
      "already_exists",
      "Errors.User.Passkey.AlreadyRegistered",
    );
    // Another user cannot take over the credential either.
    const other = await createHuman(t, orgId, "twice-other");
    const s2 = await admin(t, "RegisterPasskey", { userId: other });
    await fails(
      t,
      "rest",
      t.pat,
      "VerifyPasskeyRegistration",
      { userId: other, passkeyId: s2.passkeyId, publicKeyCredential: key.register(s2.publicKeyCredentialCreationOptions), passkeyName: "x" },
      "already_exists",
      "Errors.User.Passkey.AlreadyRegistered",
    );
  });

  it("refuses a wrong origin, another challenge, another relying party, and no user verification", async () => {
    const id = await createHuman(t, orgId, "refusals");
    const start = await admin(t, "RegisterPasskey", { userId: id });
    const options = start.publicKeyCredentialCreationOptions;
    const key = new SoftAuthenticator();
    const attempt = (publicKeyCredential: unknown) =>
      fails(
        t,
        "rest",
        t.pat,
        "VerifyPasskeyRegistration",
        { userId: id, passkeyId: start.passkeyId, publicKeyCredential, passkeyName: "x" },
        "invalid_argument",
        "Errors.User.Passkey.Invalid",
      );
    for (const origin of ["https://evil.example.test", "http://id.example.test", "https://id.example.test:8443", "https://sub.id.example.test"]) {
      const reply = await attempt(key.register(options, { origin }));
      expect(reply.body.message).toMatch(/origin/i);
    }
    expect((await attempt(key.register(options, { challenge: Buffer.from("another challenge").toString("base64url") }))).body.message).toMatch(/challenge/i);
    expect((await attempt(key.register(options, { rpId: "example.test", origin: EXTERNAL }))).body.message).toMatch(/RP ID/i);
    expect((await attempt(key.register(options, { userVerified: false }))).body.message).toMatch(/verif/i);
    // Garbage is bad input, never a 500.
    for (const junk of [{}, { id: "x" }, { id: key.id, rawId: key.id, type: "public-key", response: { clientDataJSON: "!!", attestationObject: "AAAA" } }]) {
      await attempt(junk);
    }
    // Still pending and usable with a right answer.
    await ok(t, "rest", t.pat, "VerifyPasskeyRegistration", {
      userId: id,
      passkeyId: start.passkeyId,
      publicKeyCredential: key.register(options),
      passkeyName: "ok",
    });
  });

  it("binds to the domain given, and accepts http on localhost with the external URL's port only there", async () => {
    const id = await createHuman(t, orgId, "domains");
    const start = await admin(t, "RegisterPasskey", { userId: id, domain: "Login.Example.Test" });
    expect(start.publicKeyCredentialCreationOptions.rp.id).toBe("login.example.test");
    const key = new SoftAuthenticator();
    await ok(t, "rest", t.pat, "VerifyPasskeyRegistration", {
      userId: id,
      passkeyId: start.passkeyId,
      publicKeyCredential: key.register(start.publicKeyCredentialCreationOptions),
      passkeyName: "login",
    });
    const local = await admin(t, "RegisterPasskey", { userId: id, domain: "localhost" });
    const localKey = new SoftAuthenticator();
    // The external URL here has no port: plain http://localhost is the development origin.
    await fails(
      t,
      "rest",
      t.pat,
      "VerifyPasskeyRegistration",
      {
        userId: id,
        passkeyId: local.passkeyId,
        publicKeyCredential: localKey.register(local.publicKeyCredentialCreationOptions, { origin: "http://localhost:3000" }),
        passkeyName: "dev",
      },
      "invalid_argument",
      "Errors.User.Passkey.Invalid",
    );
    await ok(t, "rest", t.pat, "VerifyPasskeyRegistration", {
      userId: id,
      passkeyId: local.passkeyId,
      publicKeyCredential: localKey.register(local.publicKeyCredentialCreationOptions, { origin: "http://localhost" }),
      passkeyName: "dev",
    });
    for (const domain of ["https://login.example.test", "login.example.test:443", "a/b", "exa mple.test", "-x.test", `${"a".repeat(64)}.test`]) {
      await fails(t, "rest", t.pat, "RegisterPasskey", { userId: id, domain }, "invalid_argument", "Errors.User.Passkey.DomainInvalid");
    }
  });

  it("refuses bad input and expired registrations", async () => {
    const id = await createHuman(t, orgId, "bad-input");
    const start = await admin(t, "RegisterPasskey", { userId: id });
    const key = new SoftAuthenticator();
    const credential = key.register(start.publicKeyCredentialCreationOptions);
    const verify = (req: Record<string, unknown>) => ({ userId: id, passkeyId: start.passkeyId, publicKeyCredential: credential, passkeyName: "n", ...req });
    await fails(t, "rest", t.pat, "VerifyPasskeyRegistration", verify({ passkeyName: "" }), "invalid_argument", "Errors.User.Passkey.NameInvalid");
    await fails(t, "rest", t.pat, "VerifyPasskeyRegistration", verify({ passkeyName: "x".repeat(201) }), "invalid_argument", "Errors.User.Passkey.NameInvalid");
    await fails(
      t,
      "rest",
      t.pat,
      "VerifyPasskeyRegistration",
      verify({ publicKeyCredential: undefined }),
      "invalid_argument",
      "Errors.User.Passkey.CredentialMissing",
    );
    await fails(t, "rest", t.pat, "VerifyPasskeyRegistration", verify({ passkeyId: "nope" }), "not_found", "Errors.User.Passkey.NotFound");
    await fails(t, "connect", t.pat, "VerifyPasskeyRegistration", verify({ publicKeyCredential: "not an object" }), "invalid_argument");
    await fails(t, "connect", t.pat, "RegisterPasskey", { userId: id, authenticator: 7 }, "invalid_argument", "Errors.User.Passkey.AuthenticatorInvalid");
    await fails(t, "rest", t.pat, "RemovePasskey", { userId: id, passkeyId: "nope" }, "not_found", "Errors.User.Passkey.NotFound");
    const robot = await createMachine(t, orgId, "passkey-robot");
    await fails(t, "rest", t.pat, "RegisterPasskey", { userId: robot }, "failed_precondition", "Errors.User.NotHuman");
    t.advanceClock(11 * 60_000);
    await fails(t, "rest", t.pat, "VerifyPasskeyRegistration", verify({}), "failed_precondition", "Errors.User.Passkey.RegistrationExpired");
  });

  it("refuses passkeys when the login settings do not allow them", async () => {
    const org = await createOrg(t, "No Passkeys");
    await setLogin(t, org, { passkeysAllowed: false });
    const id = await createHuman(t, org, "no-passkeys");
    await fails(t, "rest", t.pat, "RegisterPasskey", { userId: id }, "failed_precondition", "Errors.User.Factor.NotAllowed");
  });

  it("removes a passkey (RemovePasskey)", async () => {
    const id = await createHuman(t, orgId, "remove-pk");
    const passkeyId = await register(await humanToken(t, id, { signedIn: true }), id, new SoftAuthenticator());
    // Removing it takes a sign-in that satisfied the account, which now has a second factor: a password and the key.
    const token = await humanToken(t, id, { signedIn: true, factors: ["password", "webauthn"] });
    await ok(t, "connect", token, "RemovePasskey", { userId: id, passkeyId });
    expect((await ok(t, "rest", token, "ListPasskeys", { userId: id })).result ?? []).toEqual([]);
    await fails(t, "rest", token, "RemovePasskey", { userId: id, passkeyId }, "not_found", "Errors.User.Passkey.NotFound");
  });
});

describe("permissions", () => {
  it("hides the user from outsiders, denies the auditor writes, and lets the manager act", async () => {
    const id = await createHuman(t, orgId, "pk-target");
    const passkeyId = await register(t.pat, id, new SoftAuthenticator());
    for (const c of [nobody, foreignManager]) {
      await fails(t, "rest", c.pat, "RegisterPasskey", { userId: id }, "not_found", "Errors.User.NotFound");
      await fails(t, "rest", c.pat, "ListPasskeys", { userId: id }, "not_found", "Errors.User.NotFound");
      await fails(t, "rest", c.pat, "RemovePasskey", { userId: id, passkeyId }, "not_found", "Errors.User.NotFound");
    }
    const plain = await humanToken(t, await createHuman(t, orgId, "pk-plain"));
    await fails(t, "rest", plain, "RegisterPasskey", { userId: id }, "not_found", "Errors.User.NotFound");
    await fails(t, "rest", plain, "RemovePasskey", { userId: id, passkeyId }, "not_found", "Errors.User.NotFound");
    await fails(t, "rest", auditor.pat, "RegisterPasskey", { userId: id }, "permission_denied", "Errors.Permission.Denied");
    await fails(t, "rest", auditor.pat, "RemovePasskey", { userId: id, passkeyId }, "permission_denied", "Errors.Permission.Denied");
    expect((await ok(t, "rest", auditor.pat, "ListPasskeys", { userId: id })).result).toHaveLength(1);
    await ok(t, "rest", manager.pat, "RemovePasskey", { userId: id, passkeyId });
  });

  it("an ORG_USER_MANAGER can neither add its passkey to an ORG_OWNER nor remove the owner's", async () => {
    const owner = await withRoles(t, orgId, await createHuman(t, orgId, "pk-owner"), ["ORG_OWNER"]);
    await fails(t, "rest", manager.pat, "RegisterPasskey", { userId: owner }, "permission_denied", "Errors.User.MorePrivileged");
    const start = await admin(t, "RegisterPasskey", { userId: owner });
    const credential = new SoftAuthenticator().register(start.publicKeyCredentialCreationOptions);
    await fails(
      t,
      "rest",
      manager.pat,
      "VerifyPasskeyRegistration",
      { userId: owner, passkeyId: start.passkeyId, publicKeyCredential: credential, passkeyName: "mine" },
      "permission_denied",
      "Errors.User.MorePrivileged",
    );
    await ok(t, "rest", t.pat, "VerifyPasskeyRegistration", {
      userId: owner,
      passkeyId: start.passkeyId,
      publicKeyCredential: credential,
      passkeyName: "owner's",
    });
    await fails(t, "rest", manager.pat, "RemovePasskey", { userId: owner, passkeyId: start.passkeyId }, "permission_denied", "Errors.User.MorePrivileged");
    // Reading is no change.
    expect((await ok(t, "rest", manager.pat, "ListPasskeys", { userId: owner })).result).toHaveLength(1);
  });
});
