// Issue 23, finding 13 (c): an external OpenID Connect provider's ID token is accepted only when signed with a key of
// the provider's JWKS. The provider here is a small loopback server of the test's own: discovery, a JWKS with one key,
// and a token endpoint that signs the ID token as the test says — with the published key, with another key embedded
// in the token's `jwk` header, with another key under the published key's kid, or not at all (alg none).
import { generateKeyPairSync, type KeyObject, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { exportJWK, SignJWT, UnsecuredJWT } from "jose";
import { loginClient } from "../support/authn.js";
import { defaultOrgId, type Machine } from "../support/fixtures.js";
import { admin, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

const SUCCESS = "https://login.example.com/idp/success";
const FAILURE = "https://login.example.com/idp/failure";
const CLIENT_ID = "svc-rp";
const CLIENT_SECRET = "provider-secret";

type Signing = "published" | "embedded-jwk" | "same-kid-other-key" | "none";

let t: TestServer;
let login: Machine;
let provider: Server;
let issuer: string;
let signing: Signing = "published";
/** The nonce of the authorization request the provider is answering (the test plays the browser). */
let nonce = "";

const published = generateKeyPairSync("rsa", { modulusLength: 2048 });
const attacker = generateKeyPairSync("rsa", { modulusLength: 2048 });

async function idToken(): Promise<string> {
  const claims = { sub: "ext-user-1", nonce, email: "ext@example.com", email_verified: true, preferred_username: "ext" };
  const base = (key: KeyObject, header: Record<string, unknown>) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", ...header })
      .setIssuer(issuer)
      .setAudience(CLIENT_ID)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(key);
  switch (signing) {
    case "published":
      return base(published.privateKey, { kid: "published" });
    case "embedded-jwk":
      return base(attacker.privateKey, { jwk: await exportJWK(attacker.publicKey) });
    case "same-kid-other-key":
      return base(attacker.privateKey, { kid: "published" });
    case "none":
      return new UnsecuredJWT(claims).setIssuer(issuer).setAudience(CLIENT_ID).setIssuedAt().setExpirationTime("5m").encode();
  }
}

beforeAll(async () => {
  provider = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", issuer);
    const json = (body: unknown) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === "/.well-known/openid-configuration") {
      return json({
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        userinfo_endpoint: `${issuer}/userinfo`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["RS256"],
      });
    }
    if (url.pathname === "/jwks") return json({ keys: [{ ...(await exportJWK(published.publicKey)), kid: "published", alg: "RS256", use: "sig" }] });
    if (url.pathname === "/token") {
      for await (const _ of req);
      return json({ access_token: randomUUID(), token_type: "Bearer", expires_in: 300, id_token: await idToken() });
    }
    if (url.pathname === "/userinfo") return json({ sub: "ext-user-1" });
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  t = await startTestServer();
  login = await loginClient(t, await defaultOrgId(t), "idp-hardening-login");
}, 120_000);
afterAll(async () => {
  await t?.stop();
  await new Promise((resolve) => provider?.close(resolve));
});

/** A sign-in at the provider as the browser would end it: A's intent, then the provider's redirect to A's callback. */
async function landing(idpId: string): Promise<URL> {
  const start = await ok(t, "connect", login.pat, "StartIdentityProviderIntent", { idpId, urls: { successUrl: SUCCESS, failureUrl: FAILURE } });
  const auth = new URL(start.authUrl);
  nonce = auth.searchParams.get("nonce") ?? "";
  const state = auth.searchParams.get("state") as string;
  const res = await fetch(`${t.url}/idps/callback?state=${encodeURIComponent(state)}&code=code-${randomUUID()}`, { redirect: "manual" });
  expect(res.status).toBe(302);
  const to = new URL(res.headers.get("location") as string);
  return new URL(`${to.origin}${to.pathname}?${to.searchParams}`);
}

const at = (u: URL) => `${u.origin}${u.pathname}`;

describe("finding 13c: the provider's ID token must be signed with a key of its JWKS", () => {
  let idpId: string;
  beforeAll(async () => {
    idpId = (
      await admin(t, "AddGenericOIDCProvider", {
        name: "Loopback provider",
        issuer,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        options: { isLinkingAllowed: true, isCreationAllowed: true },
        isIdTokenMapping: true,
      })
    ).id;
  });

  it("accepts an ID token signed with the published key", async () => {
    signing = "published";
    expect(at(await landing(idpId))).toBe(SUCCESS);
  });

  it("refuses one signed with a key the token embeds (jwk header)", async () => {
    signing = "embedded-jwk";
    const to = await landing(idpId);
    expect(at(to)).toBe(FAILURE);
  });

  it("refuses one signed with another key under the published key's kid", async () => {
    signing = "same-kid-other-key";
    expect(at(await landing(idpId))).toBe(FAILURE);
  });

  it("refuses an unsigned one (alg none)", async () => {
    signing = "none";
    expect(at(await landing(idpId))).toBe(FAILURE);
  });
});
