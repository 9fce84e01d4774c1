// TOTP secrets (and identity providers' client secrets) are sealed with the master key like the signing keys:
// SVC_MASTER_KEY_PREVIOUS re-seals them at start (codes keep working under the new key), and a master key that does not
// open them is refused at start.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { idpSecretAad } from "../../src/crypto/sealer.js";
import { seal, unseal } from "../../src/crypto/secretbox.js";
import type { Server } from "../../src/server.js";
import { totpCode } from "../support/authn.js";
import { ok } from "../support/rpc.js";
import { spKeyPair } from "../support/saml.js";
import { bootOn, freshDatabase, type TestDatabase, type TestServer } from "../support/server.js";

const [K1, K2, K3] = [1, 2, 3].map((n) => Buffer.alloc(32, n).toString("base64")) as [string, string, string];
let db: TestDatabase;
let dataDir: string;

beforeAll(async () => {
  db = await freshDatabase({ migrated: true });
  dataDir = await mkdtemp(path.join(tmpdir(), "svc-authn-key-"));
});
afterAll(async () => {
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** One start of svc on the shared database with the given master keys; `logs` collects its log lines. */
async function boot(env: Record<string, string>, logs: string[] = []): Promise<{ server: Server; t: TestServer }> {
  const server = await bootOn(db, dataDir, env, logs);
  // The first start wrote the instance administrator's PAT into the data directory.
  const pat = (await readFile(path.join(dataDir, "admin.pat"), "utf8")).trim();
  const t = { server, url: server.url, pat, dataDir, advanceClock: () => {}, stop: () => server.close() } as TestServer;
  return { server, t };
}

it("re-seals TOTP secrets with SVC_MASTER_KEY_PREVIOUS and refuses a key that does not open them", async () => {
  const first = await boot({ SVC_MASTER_KEY: K1 });
  const orgId = (await ok(first.t, "rest", first.t.pat, "GetInstance")).instance.defaultOrganizationId;
  const { id } = await ok(first.t, "rest", first.t.pat, "CreateUser", {
    organizationId: orgId,
    username: "rotating",
    human: { profile: { givenName: "R", familyName: "K" }, email: { email: "rotating@example.com" } },
  });
  const { secret } = await ok(first.t, "rest", first.t.pat, "RegisterTOTP", { userId: id });
  const idp = await ok(first.t, "rest", first.t.pat, "AddGenericOIDCProvider", {
    name: "Rotating SSO",
    issuer: "https://sso.example.com",
    clientId: "c",
    clientSecret: "idp-secret",
  });
  // The newest provider has no secret (a SAML one): the start-up's check and the re-sealing pass it by.
  const cert = spKeyPair("idp.rotating.example").certB64;
  const metadata = `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="https://idp.rotating.example"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${cert}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor><md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.rotating.example/sso"/></md:IDPSSODescriptor></md:EntityDescriptor>`;
  await ok(first.t, "rest", first.t.pat, "AddSAMLProvider", { name: "Rotating SAML", metadataXml: Buffer.from(metadata).toString("base64") });
  await first.server.close();

  const logs: string[] = [];
  const rotating = await boot({ SVC_MASTER_KEY: K2, SVC_MASTER_KEY_PREVIOUS: K1 }, logs);
  expect(logs.some((l) => l.includes("sealed the TOTP secrets again"))).toBe(true);
  expect(logs.some((l) => l.includes("sealed the identity provider client secrets again"))).toBe(true);
  const row = await rotating.server.db.prisma.identityProvider.findUniqueOrThrow({ where: { id: idp.id } });
  const aad = idpSecretAad(rotating.server.instanceId, idp.id);
  expect(unseal(Buffer.from(K2, "base64"), row.clientSecretEnc, aad).toString()).toBe("idp-secret");
  await ok(rotating.t, "rest", rotating.t.pat, "VerifyTOTPRegistration", { userId: id, code: totpCode(secret) });
  await rotating.server.close();

  // A TOTP secret sealed with a key other than SVC_MASTER_KEY (the signing keys opening fine) stops the start.
  const third = (await boot({ SVC_MASTER_KEY: K2 })).server;
  const stranger = seal(Buffer.from(K3, "base64"), Buffer.alloc(20, 9), `svc:totp:${third.instanceId}:${id}`);
  await third.db.prisma.userTotp.update({ where: { userId: id }, data: { secretEnc: stranger } });
  await third.close();
  await expect(boot({ SVC_MASTER_KEY: K2 })).rejects.toThrow(/SVC_MASTER_KEY does not open the TOTP secrets/);
  await expect(boot({ SVC_MASTER_KEY: K2, SVC_MASTER_KEY_PREVIOUS: K1 })).rejects.toThrow(
    /neither SVC_MASTER_KEY nor SVC_MASTER_KEY_PREVIOUS opens the TOTP secret/,
  );
});
