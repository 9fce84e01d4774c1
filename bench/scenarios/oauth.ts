// OAuth token service scenarios: client credentials (opaque and JWT access
// tokens), the JWT profile grant, introspection of an opaque token and
// userinfo. Each creates its own machine user in setup, through the API.
import { createPrivateKey, randomUUID, sign } from "node:crypto";
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { BenchContext, Scenario } from "../run.js";

const FORM = { "content-type": "application/x-www-form-urlencoded" };
const MGMT = "urn:svc:iam:org:project:id:svc:aud";

async function api<T>(ctx: BenchContext, method: string, p: string, body?: unknown): Promise<T> {
  const res = await fetch(ctx.url + p, {
    method,
    headers: { authorization: `Bearer ${ctx.pat}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: HTTP ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

async function machineWithSecret(ctx: BenchContext, username: string, jwt = false): Promise<{ id: string; basic: string }> {
  const { id } = await api<{ id: string }>(ctx, "POST", "/v2/users/new", {
    organizationId: ctx.orgId,
    username,
    machine: { name: username, ...(jwt ? { accessTokenType: "ACCESS_TOKEN_TYPE_JWT" } : {}) },
  });
  const { clientSecret } = await api<{ clientSecret: string }>(ctx, "POST", `/v2/users/${id}/secret`, {});
  return { id, basic: `Basic ${Buffer.from(`${username}:${clientSecret}`).toString("base64")}` };
}

async function opaqueToken(ctx: BenchContext, basic: string, scope: string): Promise<string> {
  const res = await fetch(`${ctx.url}/oauth/v2/token`, {
    method: "POST",
    headers: { ...FORM, authorization: basic },
    body: new URLSearchParams({ grant_type: "client_credentials", scope }),
  });
  if (!res.ok) throw new Error(`token: HTTP ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

const signAsync = promisify(sign);
const b64url = (v: string | Buffer) => Buffer.from(v).toString("base64url");

export const OAUTH_SCENARIOS: Scenario[] = [
  {
    name: "OAuth client credentials, opaque",
    method: "POST",
    path: "/oauth/v2/token",
    anonymous: true,
    body: new URLSearchParams({ grant_type: "client_credentials", scope: MGMT }).toString(),
    setup: async (ctx) => ({ headers: { ...FORM, authorization: (await machineWithSecret(ctx, "bench-cc-opaque")).basic } }),
  },
  {
    name: "OAuth client credentials, RS256 JWT",
    method: "POST",
    path: "/oauth/v2/token",
    anonymous: true,
    body: new URLSearchParams({ grant_type: "client_credentials", scope: MGMT }).toString(),
    setup: async (ctx) => ({ headers: { ...FORM, authorization: (await machineWithSecret(ctx, "bench-cc-jwt", true)).basic } }),
  },
  {
    name: "OAuth JWT profile (RS256 assertion), opaque",
    method: "POST",
    path: "/oauth/v2/token",
    anonymous: true,
    headers: FORM,
    // Every request needs a fresh assertion (replays are refused): pre-signed here, one request body a line.
    setup: async (ctx) => {
      const { id } = await api<{ id: string }>(ctx, "POST", "/v2/users/new", {
        organizationId: ctx.orgId,
        username: "bench-jwt-profile",
        machine: { name: "jwtp" },
      });
      const { keyContent } = await api<{ keyContent: string }>(ctx, "POST", `/v2/users/${id}/keys`, {});
      const kf = JSON.parse(Buffer.from(keyContent, "base64").toString("utf8")) as { keyId: string; key: string };
      const { issuer } = (await (await fetch(`${ctx.url}/.well-known/openid-configuration`)).json()) as { issuer: string };
      const key = createPrivateKey(kf.key);
      const header = b64url(JSON.stringify({ alg: "RS256", kid: kf.keyId }));
      const now = Math.floor(Date.now() / 1000);
      // Enough for 6,000 grants/s over the warm-up and the run; past the end the bodies repeat (and show as errors).
      const count = (Number(process.env.SVC_BENCH_SECONDS || 10) + 2) * 6_000;
      const lines: string[] = [];
      const one = async () => {
        const claims = b64url(JSON.stringify({ iss: id, sub: id, aud: issuer, iat: now, exp: now + 3000, jti: randomUUID() }));
        const input = `${header}.${claims}`;
        const assertion = `${input}.${b64url(await signAsync("sha256", Buffer.from(input), key))}`;
        lines.push(new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion, scope: MGMT }).toString());
      };
      // Signed on libuv's pool, a batch at a time, so that every core helps.
      for (let i = 0; i < count; i += 256) await Promise.all(Array.from({ length: Math.min(256, count - i) }, one));
      const file = path.join(os.tmpdir(), `svc-bench-assertions-${process.pid}.txt`);
      await writeFile(file, lines.join("\n"));
      return { bodiesFile: file };
    },
  },
  {
    name: "OAuth introspection of an opaque token",
    method: "POST",
    path: "/oauth/v2/introspect",
    anonymous: true,
    setup: async (ctx) => {
      const m = await machineWithSecret(ctx, "bench-introspect");
      const token = await opaqueToken(ctx, m.basic, `openid profile ${MGMT}`);
      return { headers: { ...FORM, authorization: m.basic }, body: new URLSearchParams({ token }).toString() };
    },
  },
  {
    name: "OIDC userinfo (opaque token)",
    method: "GET",
    path: "/oidc/v1/userinfo",
    setup: async (ctx) => {
      const m = await machineWithSecret(ctx, "bench-userinfo");
      return { headers: { authorization: `Bearer ${await opaqueToken(ctx, m.basic, "openid profile email")}` } };
    },
  },
];
