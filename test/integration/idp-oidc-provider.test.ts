// External sign-in against an independent OpenID Provider: panva's oidc-provider (certified), run in-process on a
// loopback port, its development login and consent forms posted with fetch and a small cookie jar. A user new to svc
// is created just in time from userinfo; with ID-token mapping and a custom claim mapping the profile comes from the
// ID token's claims alone.
import http from "node:http";
import { afterAll, beforeAll, expect, it, jest } from "@jest/globals";
import { freePort } from "../support/apache.js";
import type { Machine } from "../support/fixtures.js";
import { loginClient } from "../support/oidc.js";
import { admin, type Json, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

const SUCCESS = "https://login.example.com/idp/success";
const FAILURE = "https://login.example.com/idp/failure";

let a: TestServer;
let login: Machine;
let op: http.Server;
let issuer: string;

/** The OP's accounts: claims by account id. */
const ACCOUNTS: Record<string, Record<string, unknown>> = {
  "op-zoe": {
    email: "zoe@op.example",
    email_verified: true,
    given_name: "Zoe",
    family_name: "Op",
    name: "Zoe Op",
    preferred_username: "zoe",
    mail_custom: "zoe.custom@op.example",
  },
};

beforeAll(async () => {
  // oidc-provider's development-mode warnings and notices (in-memory adapter, dev keys, Node 20) are expected here.
  for (const level of ["warn", "info"] as const) {
    const original = console[level].bind(console);
    jest.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      if (!String(args[0]).startsWith("oidc-provider ")) original(...args);
    });
  }
  // Imported after the spies: it warns about the runtime as it loads.
  const { default: Provider } = await import("oidc-provider");
  const port = await freePort();
  a = await startTestServer({ SVC_PORT: String(port), SVC_EXTERNAL_URL: `http://127.0.0.1:${port}` });
  login = await loginClient(a, (await admin(a, "GetInstance")).instance.defaultOrganizationId, "op-login");
  const opPort = await freePort();
  issuer = `http://127.0.0.1:${opPort}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: "svc",
        client_secret: "op-secret-for-svc",
        redirect_uris: [`http://127.0.0.1:${port}/idps/callback`],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified", "mail_custom"],
      profile: ["given_name", "family_name", "name", "preferred_username"],
    },
    conformIdTokenClaims: false,
    cookies: { keys: ["test-cookie-key"] },
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id, ...(ACCOUNTS[id] ?? {}) }) }),
  });
  op = http.createServer(provider.callback());
  await new Promise<void>((resolve) => op.listen(opPort, "127.0.0.1", resolve));
}, 120_000);
afterAll(async () => {
  await new Promise((resolve) => op?.close(resolve));
  await a?.stop();
});

/** A browser's cookies at the OP (paths ignored: all of them go everywhere). */
function jar() {
  const cookies = new Map<string, string>();
  return async (url: string, init: RequestInit = {}): Promise<Response> => {
    const res = await fetch(url, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string>), cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; ") },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair.indexOf("=");
      cookies.set(pair.slice(0, i), pair.slice(i + 1));
    }
    return res;
  };
}

const next = (res: Response, base: string) => new URL(res.headers.get("location") as string, base).toString();

/** Through the OP's login and consent forms as account `accountId`; answers svc's callback URL. */
async function atTheOp(authUrl: string, accountId: string): Promise<string> {
  const browse = jar();
  const form = (body: Record<string, string>) => ({
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(body).toString(),
  });
  let url = next(await browse(authUrl), issuer);
  for (const prompt of ["login", "consent"]) {
    expect(url).toContain("/interaction/");
    const posted = await browse(url, form(prompt === "login" ? { prompt, login: accountId, password: "any" } : { prompt }));
    url = next(await browse(next(posted, issuer)), issuer);
    if (url.includes("/idps/callback")) return url;
  }
  return url;
}

async function signInWith(idpId: string, accountId: string): Promise<{ id: string; token: string }> {
  const start = await ok(a, "connect", login.pat, "StartIdentityProviderIntent", { idpId, urls: { successUrl: SUCCESS, failureUrl: FAILURE } });
  const callback = await atTheOp(start.authUrl, accountId);
  const landed = await fetch(callback, { redirect: "manual" });
  expect(landed.status).toBe(302);
  const to = new URL(landed.headers.get("location") as string);
  expect(`${to.origin}${to.pathname}`).toBe(SUCCESS);
  return { id: to.searchParams.get("id") as string, token: to.searchParams.get("token") as string };
}

const addProvider = async (over: Json) =>
  (
    await admin(a, "AddGenericOIDCProvider", {
      name: "oidc-provider",
      issuer,
      clientId: "svc",
      clientSecret: "op-secret-for-svc",
      options: { isCreationAllowed: true, isAutoCreation: true },
      ...over,
    })
  ).id;

it("creates a user just in time from userinfo and signs it in", async () => {
  const idpId = await addProvider({});
  const intent = await signInWith(idpId, "op-zoe");
  const info = await ok(a, "connect", login.pat, "RetrieveIdentityProviderIntent", { idpIntentId: intent.id, idpIntentToken: intent.token });
  expect(info.idpInformation).toMatchObject({
    userId: "op-zoe",
    userName: "zoe",
    profile: { email: "zoe@op.example", emailVerified: true, givenName: "Zoe", familyName: "Op", displayName: "Zoe Op", preferredUsername: "zoe" },
  });
  expect(info.idpInformation.rawInformation).toMatchObject({ iss: issuer, aud: "svc", sub: "op-zoe" });
  const s = await ok(a, "connect", login.pat, "CreateSession", { checks: { idpIntent: { idpIntentId: intent.id, idpIntentToken: intent.token } } });
  const session = (await ok(a, "connect", login.pat, "GetSession", { sessionId: s.sessionId, sessionToken: s.sessionToken })).session;
  const user = (await admin(a, "GetUserByID", { userId: session.factors.user.id })).user;
  expect(user).toMatchObject({
    username: "zoe",
    human: { profile: { givenName: "Zoe", familyName: "Op" }, email: { email: "zoe@op.example", isVerified: true } },
  });
});

it("maps the ID token's claims alone, through a custom mapping", async () => {
  const idpId = await addProvider({ name: "oidc-provider (ID token)", isIdTokenMapping: true, claimMapping: { email: "mail_custom" }, options: {} });
  const intent = await signInWith(idpId, "op-zoe");
  const info = await ok(a, "connect", login.pat, "RetrieveIdentityProviderIntent", { idpIntentId: intent.id, idpIntentToken: intent.token });
  expect(info.idpInformation.profile.email).toBe("zoe.custom@op.example");
  // No userinfo request: only what the ID token carries (with conformIdTokenClaims off, the scopes' claims).
  expect(info.idpInformation.rawInformation).toHaveProperty("nonce");
  expect(info.addHumanUser).toMatchObject({ email: "zoe.custom@op.example", username: "zoe" });
});
