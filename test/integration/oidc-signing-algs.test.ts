// Signing algorithms (issue 29): the JWKS lists a key of each algorithm (RS256, ES256, EdDSA with Ed25519) with its
// alg, crv and kid; an application's id_token_signed_response_alg picks its ID tokens' (and JWT access tokens')
// algorithm. openid-client verifies the ID tokens against the JWKS (non-repudiation checks on, so the signature is
// checked and not only the claims), and expects the application's algorithm in the header; so does PyJWT; an app left at the default
// still gets RS256; a bad value is refused with INVALID_ARGUMENT.
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { codeFlow, discover, issuerOf, loginClient, type OidcApp, oidc, oidcApp } from "../support/oidc.js";
import { admin, fails, type Json } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

/** PyJWT: the key of the token's kid from the JWKS, the signature with `alg` only, iss and aud; prints sub. */
const PY_VERIFY = [
  "import jwt, json, sys",
  "keys = json.loads(sys.argv[1])['keys']",
  "kid = jwt.get_unverified_header(sys.argv[2])['kid']",
  "key = jwt.PyJWK([k for k in keys if k['kid'] == kid][0]).key",
  "print(jwt.decode(sys.argv[2], key, algorithms=[sys.argv[5]], issuer=sys.argv[3], audience=sys.argv[4])['sub'])",
].join("\n");

function hasPythonJwt(): boolean {
  try {
    execFileSync("/usr/bin/python3", ["-c", "import jwt"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

let t: TestServer;
let login: Machine;
let projectId: string;
let alice: string;

beforeAll(async () => {
  t = await startTestServer();
  const orgId = await defaultOrgId(t);
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  login = await loginClient(t, orgId, "algs-login-ui");
  projectId = await project(t, orgId, "Algs Project");
  await createHuman(t, orgId, "alg-alice");
  alice = `alg-alice@${domain}`;
}, 120_000);
afterAll(() => t?.stop());

interface Jwk {
  kty: string;
  kid: string;
  alg: string;
  use: string;
  crv?: string;
  d?: string;
}

async function configFor(app: OidcApp, alg?: string): Promise<oidc.Configuration> {
  const config = await discover(
    t,
    app.clientId,
    { client_secret: app.clientSecret, ...(alg ? { id_token_signed_response_alg: alg } : {}) },
    oidc.ClientSecretBasic(app.clientSecret),
  );
  // Without it openid-client trusts an ID token from the token endpoint (TLS) without checking its signature.
  oidc.enableNonRepudiationChecks(config);
  return config;
}

describe("the JWKS and discovery", () => {
  it("list a key of each algorithm with its alg, crv and kid, and no private part", async () => {
    const jwks = (await (await fetch(`${t.url}/oauth/v2/keys`)).json()) as { keys: Jwk[] };
    const byAlg = new Map(jwks.keys.map((k) => [k.alg, k]));
    expect(byAlg.get("RS256")).toMatchObject({ kty: "RSA", use: "sig", kid: expect.any(String) });
    expect(byAlg.get("ES256")).toMatchObject({ kty: "EC", crv: "P-256", use: "sig", kid: expect.any(String) });
    expect(byAlg.get("EdDSA")).toMatchObject({ kty: "OKP", crv: "Ed25519", use: "sig", kid: expect.any(String) });
    expect(jwks.keys[0]?.alg).toBe("RS256");
    expect(new Set(jwks.keys.map((k) => k.kid)).size).toBe(jwks.keys.length);
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);
    const doc = (await (await fetch(`${t.url}/.well-known/openid-configuration`)).json()) as Json;
    expect(doc.id_token_signing_alg_values_supported).toEqual(["RS256", "ES256", "EdDSA"]);
  });
});

describe("id_token_signed_response_alg", () => {
  for (const alg of ["ES256", "EdDSA"]) {
    it(`${alg}: openid-client verifies the ID token from the JWKS; a JWT access token follows the app's algorithm`, async () => {
      const app = await oidcApp(t, projectId, `app-${alg}`, { idTokenSignedResponseAlg: alg, accessTokenType: "ACCESS_TOKEN_TYPE_JWT" });
      const got = await admin(t, "GetApplication", { projectId, appId: app.appId });
      expect(got.app.oidc.idTokenSignedResponseAlg).toBe(alg);
      const { tokens } = await codeFlow(t, await configFor(app, alg), login, alice);
      const idHeader = decodeProtectedHeader(tokens.id_token as string);
      expect(idHeader.alg).toBe(alg);
      expect(tokens.claims()?.aud).toContain(app.clientId);

      // The access token is a JWT of the same algorithm, which svc itself accepts at userinfo.
      expect(decodeProtectedHeader(tokens.access_token).alg).toBe(alg);
      const jwks = createRemoteJWKSet(new URL(`${t.url}/oauth/v2/keys`));
      const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: issuerOf(t), typ: "at+jwt", algorithms: [alg] });
      expect(payload.client_id).toBe(app.clientId);
      const info = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(info.status).toBe(200);

      // A verifier that is not JavaScript (PyJWT, Debian's python3-jwt) accepts the ID token from the JWKS, not a tampered one.
      if (hasPythonJwt()) {
        const jwksText = await (await fetch(`${t.url}/oauth/v2/keys`)).text();
        const py = (token: string) => execFileSync("/usr/bin/python3", ["-c", PY_VERIFY, jwksText, token, issuerOf(t), app.clientId, alg], { stdio: "pipe" });
        expect(
          py(tokens.id_token as string)
            .toString()
            .trim(),
        ).toBe(tokens.claims()?.sub);
        expect(() => py(`${(tokens.id_token as string).slice(0, -6)}AAAAAA`)).toThrow();
      }
    });
  }

  it("an app left at the default gets RS256, and openid-client's default expectation holds", async () => {
    const app = await oidcApp(t, projectId, "app-default");
    const got = await admin(t, "GetApplication", { projectId, appId: app.appId });
    expect(got.app.oidc.idTokenSignedResponseAlg).toBe("RS256");
    const { tokens } = await codeFlow(t, await configFor(app), login, alice);
    expect(decodeProtectedHeader(tokens.id_token as string).alg).toBe("RS256");
  });

  it("an RP expecting RS256 refuses an ES256 ID token (the header is the app's algorithm)", async () => {
    const app = await oidcApp(t, projectId, "app-es-mismatch", { idTokenSignedResponseAlg: "ES256" });
    const err = (await codeFlow(t, await configFor(app, "RS256"), login, alice).catch((e: unknown) => e)) as Error & { cause?: { message?: string } };
    expect(err).toBeInstanceOf(Error);
    expect(err.cause?.message).toMatch(/"alg"/);
  });

  it("a value other than RS256, ES256 or EdDSA is refused with INVALID_ARGUMENT, over Connect and REST", async () => {
    for (const [i, bad] of ["HS256", "none", "es256", "RS512"].entries()) {
      const via = i % 2 ? "rest" : "connect";
      const req = { projectId, name: `bad-${i}`, oidc: { redirectUris: ["https://rp.example.com/cb"], idTokenSignedResponseAlg: bad } };
      await fails(t, via, t.pat, "CreateApplication", req, "invalid_argument", "Errors.App.SigningAlg.Unsupported");
    }
    const app = await oidcApp(t, projectId, "app-update-bad");
    const update = { projectId, appId: app.appId, oidc: { redirectUris: ["https://rp.example.com/cb"], idTokenSignedResponseAlg: "PS256" } };
    await fails(t, "rest", t.pat, "UpdateApplication", update, "invalid_argument", "Errors.App.SigningAlg.Unsupported");
    const after = await admin(t, "GetApplication", { projectId, appId: app.appId });
    expect(after.app.oidc.idTokenSignedResponseAlg).toBe("RS256");
  });
});

describe("a database from before ES256 and EdDSA", () => {
  it("gets their keys from what start-up runs, and an EdDSA app's first token makes one if missing; the RS256 key stays active", async () => {
    const keys = t.server.tokens.keys;
    const jwks = async () => ((await (await fetch(`${t.url}/oauth/v2/keys`)).json()) as { keys: Jwk[] }).keys;
    const rsKid = (await jwks()).find((k) => k.alg === "RS256")?.kid;
    await t.server.db.prisma.signingKey.deleteMany({ where: { alg: { in: ["ES256", "EdDSA"] } } });
    keys.invalidate();
    expect((await jwks()).map((k) => k.alg)).toEqual(["RS256"]);
    await keys.ready();
    const after = await jwks();
    expect(after.map((k) => k.alg).sort()).toEqual(["ES256", "EdDSA", "RS256"]);
    expect(after.find((k) => k.alg === "RS256")?.kid).toBe(rsKid);

    // Lazily too: with the EdDSA key gone again, the first EdDSA token makes one, RS256 untouched.
    await t.server.db.prisma.signingKey.deleteMany({ where: { alg: "EdDSA" } });
    keys.invalidate();
    const app = await oidcApp(t, projectId, "app-lazy-eddsa", { idTokenSignedResponseAlg: "EdDSA" });
    const { tokens } = await codeFlow(t, await configFor(app, "EdDSA"), login, alice);
    const kid = decodeProtectedHeader(tokens.id_token as string).kid;
    const last = await jwks();
    expect(last.find((k) => k.alg === "EdDSA")?.kid).toBe(kid);
    expect(last.find((k) => k.alg === "RS256")?.kid).toBe(rsKid);
  });
});
