// prompt=select_account and login_hint (OIDC Core §3.1.2.1, issue 29) through the hosted login's pages, as a browser
// with a cookie drives them (fetch): a login_hint selects its user's session of this browser (by login name, or by a
// username only one user has, in any case), else pre-fills the login name the same way for a user who exists and one
// who does not; select_account shows the account chooser even when a hint names a session (that account first, and
// "use another account"), and the user's choice is what signs in; prompt=none answers from the hinted session,
// login_required without one, account_selection_required for two without a hint; prompt=none with select_account is
// invalid_request.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { decodeJwt } from "jose";
import { createHuman, defaultOrgId, PASSWORD, project } from "../support/fixtures.js";
import { authorizeGet, type OidcApp, oidcApp, redirectQuery } from "../support/oidc.js";
import { admin } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { locationOf, signInThroughPages, Visitor } from "../support/visitor.js";

const CB = "https://rp.example.com/cb";
let t: TestServer;
let domain: string;
let app: OidcApp;
let ann: string;
let bob: string;
/** A browser signed in as ann and as bob. */
let both: Visitor;

beforeAll(async () => {
  t = await startTestServer();
  const orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  app = await oidcApp(t, await project(t, orgId, "Hint Project"), "hint-rp");
  [ann, bob] = await Promise.all([createHuman(t, orgId, "hint-ann"), createHuman(t, orgId, "hint-bob"), createHuman(t, orgId, "hint-carl")]);
  both = new Visitor(t);
  for (const name of ["hint-ann", "hint-bob"]) {
    const ar = await authRequest({ prompt: "login" });
    const { next } = await signInThroughPages(both, `${name}@${domain}`, PASSWORD, { authRequest: ar });
    expect(next.origin + next.pathname).toBe(CB);
  }
}, 120_000);
afterAll(() => t?.stop());

/** An auth request of the app: its id (the login UI's ?authRequest=). */
async function authRequest(extra: Record<string, string> = {}): Promise<string> {
  const res = await authorizeGet(t, { client_id: app.clientId, redirect_uri: CB, response_type: "code", scope: "openid", state: "s", ...extra });
  return locationOf(res).searchParams.get("authRequest") as string;
}

/** The user the code of a callback URL was issued for (redeemed at the token endpoint, the ID token's sub). */
async function userOf(callback: URL): Promise<string> {
  expect(callback.origin + callback.pathname).toBe(CB);
  const code = callback.searchParams.get("code");
  expect(code).toEqual(expect.any(String));
  const res = await fetch(`${t.url}/oauth/v2/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(app.clientId)}:${encodeURIComponent(app.clientSecret)}`).toString("base64")}`,
    },
    body: new URLSearchParams({ grant_type: "authorization_code", code: code as string, redirect_uri: CB }),
  });
  expect(res.status).toBe(200);
  return decodeJwt(((await res.json()) as { id_token: string }).id_token).sub as string;
}

/** The login page for a new auth request with these parameters, in `v`. */
const loginFor = async (v: Visitor, extra: Record<string, string>) => v.get(`/ui/login/login?authRequest=${await authRequest(extra)}`);

/** The accounts the chooser lists, in order: [session id, login name]. */
function chooserAccounts(body: string): [string, string][] {
  return [...body.matchAll(/name="session" value="([^"]+)"[\s\S]*?class="login-name">([^<]+)</g)].map((m) => [m[1] as string, m[2] as string]);
}

describe("login_hint", () => {
  it.each([
    ["a login name", "hint-bob@DOMAIN", () => bob],
    ["a username only one user has", "hint-ann", () => ann],
    ["in another case", "HINT-BOB", () => bob],
  ])("as %s selects that user's session of the browser: no page, a code for that user", async (_what, hint, user) => {
    const { res } = await loginFor(both, { login_hint: hint.replace("DOMAIN", domain) });
    expect(res.status).toBe(302);
    expect(await userOf(locationOf(res))).toBe(user());
  });

  it("without a hint, two sessions send the browser to the account chooser", async () => {
    const { res } = await loginFor(both, {});
    expect(res.status).toBe(302);
    expect(locationOf(res).pathname).toBe("/ui/login/accounts");
  });

  it("naming a user without a session here (or nobody) pre-fills the login name, the same page either way", async () => {
    const pages = [];
    for (const hint of ["hint-carl", "hint-nobody"]) {
      const { res, body } = await loginFor(both, { login_hint: hint });
      expect(res.status).toBe(200);
      expect(body).toContain(`name="loginName" type="text" value="${hint}"`);
      pages.push(
        body
          .replace(/hint-(carl|nobody)/g, "X")
          .replace(/value="[^"]{20,}"/g, 'value=""')
          .replace(/authRequest=\w+/g, "authRequest="),
      );
    }
    expect(pages[0]).toBe(pages[1]);
  });
});

describe("prompt=select_account", () => {
  it("shows the chooser even when the hint names a session: that account first, another account offered; the choice signs in", async () => {
    const ar = await authRequest({ prompt: "select_account", login_hint: `hint-bob@${domain}` });
    const login = await both.get(`/ui/login/login?authRequest=${ar}`);
    expect(login.res.status).toBe(302);
    const chooser = locationOf(login.res);
    expect(chooser.pathname).toBe("/ui/login/accounts");
    const page = await both.get(chooser.pathname + chooser.search);
    expect(page.res.status).toBe(200);
    const accounts = chooserAccounts(page.body);
    expect(accounts.map(([, name]) => name)).toEqual([`hint-bob@${domain}`, `hint-ann@${domain}`]);
    expect(page.body).toContain("Use another account");
    // The user picks ann although the client hinted bob.
    const annSession = accounts[1]?.[0] as string;
    const chosen = await both.post("/ui/login/accounts", { authRequest: ar, session: annSession });
    expect(chosen.res.status).toBe(303);
    expect(await userOf(locationOf(chosen.res))).toBe(ann);
  });

  it("with no session in the browser, the login page (to sign in with another account)", async () => {
    const fresh = new Visitor(t);
    const { res, body } = await loginFor(fresh, { prompt: "select_account", login_hint: "hint-carl" });
    expect(res.status).toBe(200);
    expect(body).toContain('name="loginName" type="text" value="hint-carl"');
  });
});

describe("prompt=none with hints", () => {
  it("answers from the hinted session; login_required without one; account_selection_required for two without a hint", async () => {
    const hinted = await loginFor(both, { prompt: "none", login_hint: "hint-bob" });
    expect(hinted.res.status).toBe(302);
    expect(await userOf(locationOf(hinted.res))).toBe(bob);
    const none = await loginFor(both, { prompt: "none", login_hint: "hint-carl" });
    expect(Object.fromEntries(locationOf(none.res).searchParams)).toMatchObject({ error: "login_required", state: "s" });
    const two = await loginFor(both, { prompt: "none" });
    expect(Object.fromEntries(locationOf(two.res).searchParams)).toMatchObject({ error: "account_selection_required", state: "s" });
  });

  it("prompt=none with select_account is invalid_request (OIDC Core §3.1.2.1)", async () => {
    const res = await authorizeGet(t, {
      client_id: app.clientId,
      redirect_uri: CB,
      response_type: "code",
      scope: "openid",
      state: "s",
      prompt: "none select_account",
    });
    expect(redirectQuery(res)).toMatchObject({ error: "invalid_request", state: "s" });
  });
});
