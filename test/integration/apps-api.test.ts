// Applications: API and OIDC clients of a project. Generated client ids,
// secrets shown once and stored as SHA-256, key files that sign assertions
// verifiable with the stored public key, OIDC configuration rules (redirect
// URIs per RFC 8252, auth methods, grant/response types), lifecycle, and the
// allow/deny table.

import { createPrivateKey, createPublicKey } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { jwtVerify, SignJWT } from "jose";
import { ApplicationService } from "../../gen/svc/app/v2/app_service_pb.js";
import { generateRsaKeyPair } from "../../src/crypto/rsa.js";
import { sha256 } from "../../src/crypto/tokens.js";
import { call, fails, ok, type ProjectWorld, project, projectWorld, type Rpc, VIAS } from "../support/projects.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let w: ProjectWorld;
let projectId: string;

beforeAll(async () => {
  t = await startTestServer();
  w = await projectWorld(t, "ap");
  projectId = await project(t, w.orgA, "My Shop!");
});
afterAll(() => t.stop());

const db = () => t.server.db.prisma;
const WEB = {
  redirectUris: ["https://app.example.com/cb"],
  postLogoutRedirectUris: ["https://app.example.com/bye"],
  grantTypes: ["OIDC_GRANT_TYPE_AUTHORIZATION_CODE", "OIDC_GRANT_TYPE_REFRESH_TOKEN"],
  responseTypes: ["OIDC_RESPONSE_TYPE_CODE"],
  appType: "OIDC_APP_TYPE_WEB",
  authMethodType: "OIDC_AUTH_METHOD_TYPE_POST",
  accessTokenType: "ACCESS_TOKEN_TYPE_JWT",
  idTokenRoleAssertion: true,
  idTokenUserinfoAssertion: true,
};

describe("API apps", () => {
  it("creates with a generated client id and a secret shown once, stored as SHA-256", async () => {
    for (const via of VIAS) {
      const out = await ok(t, via, w.ownerA.pat, "CreateApplication", { projectId, name: `api ${via}`, api: {} });
      expect(out).toEqual({ appId: expect.any(String), clientId: `${out.appId}@my-shop`, clientSecret: expect.any(String), creationDate: expect.any(String) });
      const row = await db().application.findUniqueOrThrow({ where: { id: out.appId } });
      expect(row).toMatchObject({ type: "API", authMethod: "client_secret_basic", accessTokenType: "BEARER", state: "ACTIVE", orgId: w.orgA });
      expect(Buffer.from(row.secretHash as Uint8Array)).toEqual(Buffer.from(sha256(out.clientSecret)));
      const got = await ok(t, via, w.auditorA.pat, "GetApplication", { projectId, appId: out.appId });
      expect(got.app).toEqual({
        id: out.appId,
        details: expect.objectContaining({ resourceOwner: w.orgA }),
        projectId,
        name: `api ${via}`,
        state: "APP_STATE_ACTIVE",
        clientId: out.clientId,
        api: { authMethodType: "API_AUTH_METHOD_TYPE_BASIC", accessTokenType: "ACCESS_TOKEN_TYPE_BEARER" },
        hasClientSecret: true,
      });
      // Never listed or read back.
      const listed = await ok(t, via, w.ownerA.pat, "ListApplications", { projectId });
      expect(JSON.stringify(listed)).not.toContain(out.clientSecret);
      expect(JSON.stringify(got)).not.toContain(out.clientSecret);

      const again = await ok(t, via, w.ownerA.pat, "RegenerateClientSecret", { projectId, appId: out.appId });
      expect(again.clientSecret).not.toBe(out.clientSecret);
      const after = await db().application.findUniqueOrThrow({ where: { id: out.appId } });
      expect(Buffer.from(after.secretHash as Uint8Array)).toEqual(Buffer.from(sha256(again.clientSecret)));
      await fails(t, via, w.ownerA.pat, "CreateApplication", { projectId, name: `api ${via}`, api: {} }, "already_exists", "Errors.App.AlreadyExists");
    }
  });

  it("private_key_jwt: key files sign assertions that verify against the stored public key; caller keys accepted", async () => {
    for (const via of VIAS) {
      const out = await ok(t, via, w.ownerA.pat, "CreateApplication", {
        projectId,
        name: `jwt ${via}`,
        api: { authMethodType: "API_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT", accessTokenType: "ACCESS_TOKEN_TYPE_JWT" },
      });
      expect(out.clientSecret ?? "").toBe("");
      await fails(t, via, w.ownerA.pat, "RegenerateClientSecret", { projectId, appId: out.appId }, "failed_precondition", "Errors.App.Secret.NotSupported");
      const expirationDate = new Date(Date.now() + 86_400_000).toISOString();
      const key = await ok(t, via, w.ownerA.pat, "AddApplicationKey", { projectId, appId: out.appId, expirationDate });
      const file = JSON.parse(Buffer.from(key.keyDetails, "base64").toString("utf8"));
      expect(file).toEqual({
        type: "application",
        keyId: key.keyId,
        key: expect.stringContaining("PRIVATE KEY"),
        appId: out.appId,
        clientId: out.clientId,
        expirationDate,
      });

      const jwt = await new SignJWT({})
        .setProtectedHeader({ alg: "RS256", kid: file.keyId })
        .setIssuer(file.clientId)
        .setSubject(file.clientId)
        .setAudience("http://issuer")
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(createPrivateKey(file.key));
      const stored = await db().appKey.findUniqueOrThrow({ where: { id: file.keyId } });
      expect(stored.appId).toBe(out.appId);
      const verified = await jwtVerify(jwt, createPublicKey(stored.publicKey), { issuer: out.clientId, audience: "http://issuer" });
      expect(verified.payload.sub).toBe(out.clientId);

      const own = await generateRsaKeyPair();
      const uploaded = await ok(t, via, w.ownerA.pat, "AddApplicationKey", {
        projectId,
        appId: out.appId,
        publicKey: Buffer.from(own.publicKeyPem).toString("base64"),
      });
      expect(uploaded.keyDetails ?? "").toBe("");
      await fails(
        t,
        via,
        w.ownerA.pat,
        "AddApplicationKey",
        { projectId, appId: out.appId, publicKey: Buffer.from("nope").toString("base64") },
        "invalid_argument",
        "Errors.App.Key.Invalid",
      );
      await fails(
        t,
        via,
        w.ownerA.pat,
        "AddApplicationKey",
        { projectId, appId: out.appId, expirationDate: "2000-01-01T00:00:00Z" },
        "invalid_argument",
        "Errors.App.Key.ExpirationInPast",
      );
      const keys = await ok(t, via, w.auditorA.pat, "ListApplicationKeys", { projectId, appId: out.appId, query: { asc: true } });
      expect(keys.result).toEqual([
        { id: key.keyId, appId: out.appId, creationDate: expect.any(String), expirationDate },
        { id: uploaded.keyId, appId: out.appId, creationDate: expect.any(String) },
      ]);
      expect(JSON.stringify(keys)).not.toContain("KEY-----");
      await ok(t, via, w.ownerA.pat, "RemoveApplicationKey", { projectId, appId: out.appId, keyId: key.keyId });
      await fails(t, via, w.ownerA.pat, "RemoveApplicationKey", { projectId, appId: out.appId, keyId: key.keyId }, "not_found", "Errors.App.Key.NotFound");

      // Secret apps take no keys.
      const secretApp = await ok(t, "rest", w.ownerA.pat, "CreateApplication", { projectId, name: `basic ${via}`, api: {} });
      await fails(t, via, w.ownerA.pat, "AddApplicationKey", { projectId, appId: secretApp.appId }, "failed_precondition", "Errors.App.Key.NotSupported");
    }
  });
});

describe("OIDC apps", () => {
  it("stores the configuration and returns it", async () => {
    for (const via of VIAS) {
      const out = await ok(t, via, w.ownerA.pat, "CreateApplication", { projectId, name: `web ${via}`, oidc: WEB });
      expect(out.clientSecret).toEqual(expect.any(String));
      const got = await ok(t, via, w.ownerA.pat, "GetApplication", { projectId, appId: out.appId });
      // The ID token's signing algorithm is shown as in force: RS256 when none was chosen.
      expect(got.app.oidc).toEqual({ ...WEB, idTokenSignedResponseAlg: "RS256" });
      const row = await db().application.findUniqueOrThrow({ where: { id: out.appId } });
      expect(row).toMatchObject({ type: "OIDC", authMethod: "client_secret_post", accessTokenType: "JWT" });
      expect(row.config).toEqual({
        kind: "oidc",
        appType: "web",
        redirectUris: WEB.redirectUris,
        postLogoutRedirectUris: WEB.postLogoutRedirectUris,
        grantTypes: ["authorization_code", "refresh_token"],
        responseTypes: ["code"],
        idTokenRoleAssertion: true,
        idTokenUserinfoAssertion: true,
        devMode: false,
        pkceRequired: false,
      });
    }
  });

  it("public clients use none with PKCE; native apps may use loopback http and reversed-domain schemes", async () => {
    const native = await ok(t, "rest", w.ownerA.pat, "CreateApplication", {
      projectId,
      name: "native",
      oidc: { appType: "OIDC_APP_TYPE_NATIVE", redirectUris: ["http://127.0.0.1:8123/cb", "http://[::1]/cb", "com.example.app:/oauth2redirect"] },
    });
    expect(native.clientSecret ?? "").toBe("");
    const row = await db().application.findUniqueOrThrow({ where: { id: native.appId } });
    expect(row.authMethod).toBe("none");
    expect(row.config).toMatchObject({ pkceRequired: true, appType: "native" });
    const spa = await ok(t, "rest", w.ownerA.pat, "CreateApplication", {
      projectId,
      name: "spa",
      oidc: { appType: "OIDC_APP_TYPE_USER_AGENT", redirectUris: ["https://spa.example.com/cb"] },
    });
    expect((await db().application.findUniqueOrThrow({ where: { id: spa.appId } })).authMethod).toBe("none");
    const dev = await ok(t, "rest", w.ownerA.pat, "CreateApplication", {
      projectId,
      name: "dev",
      oidc: { redirectUris: ["http://dev.local:3000/cb"], devMode: true },
    });
    expect(dev.appId).toEqual(expect.any(String));
  });

  it("rejects invalid configurations", async () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ redirectUris: ["http://app.example.com/cb"] }, "Errors.App.Uri.HttpsRequired"],
      [{ redirectUris: ["/relative"] }, "Errors.App.Uri.Invalid"],
      [{ redirectUris: ["https://app.example.com/cb#frag"] }, "Errors.App.Uri.Fragment"],
      [{ redirectUris: ["javascript:alert(1)"] }, "Errors.App.Uri.Scheme"],
      [{ redirectUris: ["myapp:/cb"] }, "Errors.App.Uri.Scheme"],
      [{ appType: "OIDC_APP_TYPE_NATIVE", redirectUris: ["myapp:/cb"] }, "Errors.App.Uri.Scheme"],
      [{ appType: "OIDC_APP_TYPE_NATIVE", redirectUris: ["http://evil.example.com/cb"] }, "Errors.App.Uri.HttpsRequired"],
      [{ redirectUris: ["https://a.example.com/cb"], postLogoutRedirectUris: ["http://a.example.com/"] }, "Errors.App.Uri.HttpsRequired"],
      [{ redirectUris: [] }, "Errors.App.RedirectUris.Missing"],
      [{ redirectUris: ["https://a.example.com/cb"], authMethodType: "OIDC_AUTH_METHOD_TYPE_NONE" }, "Errors.App.AuthMethod.NoneForWeb"],
      [
        { appType: "OIDC_APP_TYPE_USER_AGENT", redirectUris: ["https://a.example.com/cb"], authMethodType: "OIDC_AUTH_METHOD_TYPE_BASIC" },
        "Errors.App.AuthMethod.PublicClient",
      ],
      [{ grantTypes: ["OIDC_GRANT_TYPE_REFRESH_TOKEN"] }, "Errors.App.GrantTypes.RefreshAlone"],
      [{ grantTypes: ["OIDC_GRANT_TYPE_DEVICE_CODE"], responseTypes: ["OIDC_RESPONSE_TYPE_CODE"] }, "Errors.App.ResponseTypes.Mismatch"],
      [{ redirectUris: Array.from({ length: 21 }, (_, i) => `https://a.example.com/${i}`) }, "Errors.App.Uri.TooMany"],
    ];
    for (const via of VIAS) {
      for (const [oidc, reason] of bad) {
        const reply = await call(t, via, w.ownerA.pat, "CreateApplication", { projectId, name: "bad", oidc });
        expect({ via, oidc, code: reply.code, reason: reply.reason }).toEqual({ via, oidc, code: "invalid_argument", reason });
      }
      await fails(t, via, w.ownerA.pat, "CreateApplication", { projectId, name: "bad" }, "invalid_argument", "Errors.App.Config.Missing");
      await fails(t, via, w.ownerA.pat, "CreateApplication", { projectId, name: "", api: {} }, "invalid_argument", "Errors.App.Name.Missing");
    }
    // A device-only client needs no redirect URI.
    await ok(t, "rest", w.ownerA.pat, "CreateApplication", {
      projectId,
      name: "tv",
      oidc: { grantTypes: ["OIDC_GRANT_TYPE_DEVICE_CODE", "OIDC_GRANT_TYPE_REFRESH_TOKEN"] },
    });
  });
});

describe("lifecycle", () => {
  it("updates, deactivates, reactivates, deletes; the kind cannot change; leaving a secret method drops the secret", async () => {
    for (const via of VIAS) {
      const out = await ok(t, via, w.ownerA.pat, "CreateApplication", { projectId, name: `life ${via}`, oidc: WEB });
      await ok(t, via, w.ownerA.pat, "UpdateApplication", { projectId, appId: out.appId, name: `life2 ${via}` });
      await fails(t, via, w.ownerA.pat, "UpdateApplication", { projectId, appId: out.appId, api: {} }, "invalid_argument", "Errors.App.Kind.Immutable");
      await ok(t, via, w.ownerA.pat, "UpdateApplication", {
        projectId,
        appId: out.appId,
        oidc: { ...WEB, authMethodType: "OIDC_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT", devMode: true },
      });
      const got = (await ok(t, via, w.ownerA.pat, "GetApplication", { projectId, appId: out.appId })).app;
      expect(got).toMatchObject({ name: `life2 ${via}`, oidc: { authMethodType: "OIDC_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT", devMode: true } });
      expect(got.hasClientSecret).toBeUndefined();
      expect((await db().application.findUniqueOrThrow({ where: { id: out.appId } })).secretHash).toBeNull();

      await ok(t, via, w.ownerA.pat, "DeactivateApplication", { projectId, appId: out.appId });
      await fails(t, via, w.ownerA.pat, "DeactivateApplication", { projectId, appId: out.appId }, "failed_precondition", "Errors.App.AlreadyInactive");
      const inactive = await ok(t, via, w.ownerA.pat, "ListApplications", { projectId, queries: [{ stateQuery: { state: "APP_STATE_INACTIVE" } }] });
      expect(inactive.result.map((a: { id: string }) => a.id)).toEqual([out.appId]);
      expect((await db().application.findUniqueOrThrow({ where: { id: out.appId } })).state).toBe("INACTIVE");
      await ok(t, via, w.ownerA.pat, "ReactivateApplication", { projectId, appId: out.appId });
      await fails(t, via, w.ownerA.pat, "ReactivateApplication", { projectId, appId: out.appId }, "failed_precondition", "Errors.App.NotInactive");
      const key = await ok(t, via, w.ownerA.pat, "AddApplicationKey", { projectId, appId: out.appId });
      await ok(t, via, w.ownerA.pat, "DeleteApplication", { projectId, appId: out.appId });
      await fails(t, via, w.ownerA.pat, "GetApplication", { projectId, appId: out.appId }, "not_found", "Errors.App.NotFound");
      expect(await db().appKey.count({ where: { id: key.keyId } })).toBe(0);
    }
  });

  it("an app of another project is not found through this one", async () => {
    const other = await project(t, w.orgA, "Other shop");
    const out = await ok(t, "rest", w.ownerA.pat, "CreateApplication", { projectId: other, name: "x", api: {} });
    await fails(t, "rest", w.ownerA.pat, "GetApplication", { projectId, appId: out.appId }, "not_found", "Errors.App.NotFound");
    const named = await ok(t, "rest", w.ownerA.pat, "ListApplications", { projectId: other, queries: [{ nameQuery: { name: "x" } }] });
    expect(named.result).toHaveLength(1);
  });

  it("over gRPC", async () => {
    const client = createClient(ApplicationService, createGrpcTransport({ baseUrl: t.url }));
    const headers = { authorization: `Bearer ${w.ownerA.pat}` };
    const out = await client.createApplication({ projectId, name: "grpc", config: { case: "api", value: {} } }, { headers });
    expect(out.clientSecret).not.toBe("");
    const got = await client.getApplication({ projectId, appId: out.appId }, { headers });
    expect(got.app?.config.case).toBe("api");
    await client.deleteApplication({ projectId, appId: out.appId }, { headers });
  });
});

describe("allow/deny", () => {
  type Caller = "ownerA" | "ppmA" | "userManagerA" | "auditorA" | "plainA" | "ownerB";
  const CALLERS: Caller[] = ["ownerA", "ppmA", "userManagerA", "auditorA", "plainA", "ownerB"];
  const code = (o: "ok" | "denied" | "hidden") => (o === "ok" ? "ok" : o === "denied" ? "permission_denied" : "not_found");
  const READ = { ownerA: "ok", ppmA: "denied", userManagerA: "denied", auditorA: "ok", plainA: "hidden", ownerB: "hidden" } as const;
  const WRITE = { ownerA: "ok", ppmA: "denied", userManagerA: "denied", auditorA: "denied", plainA: "hidden", ownerB: "hidden" } as const;

  it("per RPC and role", async () => {
    for (const via of VIAS) {
      for (const caller of CALLERS) {
        const app = await ok(t, "rest", t.pat, "CreateApplication", {
          projectId,
          name: `perm ${via} ${caller}`,
          api: { authMethodType: "API_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT" },
        });
        const key = await ok(t, "rest", t.pat, "AddApplicationKey", { projectId, appId: app.appId });
        const target = { projectId, appId: app.appId };
        const cases: [Rpc, Record<string, unknown>, typeof READ | typeof WRITE][] = [
          ["CreateApplication", { projectId, name: `new ${via} ${caller}`, api: {} }, WRITE],
          ["GetApplication", target, READ],
          ["ListApplications", { projectId }, READ],
          ["UpdateApplication", { ...target, name: `renamed ${via} ${caller}` }, WRITE],
          ["DeactivateApplication", target, WRITE],
          ["ReactivateApplication", target, WRITE],
          ["ListApplicationKeys", target, READ],
          ["AddApplicationKey", target, WRITE],
          ["RemoveApplicationKey", { ...target, keyId: key.keyId }, WRITE],
          ["RegenerateClientSecret", target, WRITE],
          ["DeleteApplication", target, WRITE],
        ];
        for (const [rpc, req, table] of cases) {
          const reply = await call(t, via, w[caller].pat, rpc, req);
          // RegenerateClientSecret on a key app fails its precondition once allowed.
          const want = rpc === "RegenerateClientSecret" && table[caller] === "ok" ? "failed_precondition" : code(table[caller]);
          expect({ via, caller, rpc, code: reply.code }).toEqual({ via, caller, rpc, code: want });
        }
      }
    }
  });
});
