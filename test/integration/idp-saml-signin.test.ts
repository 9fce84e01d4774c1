// Brokering to an external SAML identity provider: samlify's IdentityProvider runs in the test on a loopback port
// (its SSO endpoint parses svc's AuthnRequest with samlify, which verifies svc's signature with the certificate of
// svc's SP metadata and validates the XML with xmllint against the OASIS schema, and answers with a signed Response
// posted to svc's ACS). Through the hosted login pages (fetch with a cookie jar) a user new to svc is created just in
// time and the relying party gets svc's own code and tokens; linking by NameID or by an attribute; the HTTP-POST
// binding; a Response signed instead of its Assertion. Then every refusal of a Response, each as its own test.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { freePort } from "../support/apache.js";
import { type Machine, project } from "../support/fixtures.js";
import { authorizeGet, authRequestOf, discover, loginClient, oidc, oidcApp } from "../support/oidc.js";
import { admin, type Json, ok } from "../support/rpc.js";
import { type ExternalUser, formOf, type ParsedRequest, postTo, type SamlifyIdp, startSamlifyIdp } from "../support/saml-idp.js";
import { startTestServer, type TestServer } from "../support/server.js";

const SUCCESS = "https://login.example.com/idp/success";
const FAILURE = "https://login.example.com/idp/failure";
const RP = "https://rp.example.com/cb";

let t: TestServer;
let ext: SamlifyIdp;
let login: Machine;
let orgId: string;
/** The instance-wide provider: creation, auto-creation, auto-update allowed. */
let jit: string;
let config: oidc.Configuration;
let clientId: string;

const b64 = (s: string) => Buffer.from(s).toString("base64");

async function samlProvider(name: string, over: Json = {}): Promise<string> {
  return (await admin(t, "AddSAMLProvider", { name, metadataXml: b64(ext.metadata), ...over })).id;
}

const user = (name: string, over: Partial<ExternalUser> = {}): ExternalUser => ({
  nameId: `${name}@idp.example.test`,
  email: `${name}@idp.example.test`,
  firstName: "Ext",
  surName: name,
  userName: name,
  ...over,
});

interface Started {
  intentId: string;
  parsed: ParsedRequest;
}

/** A login client's intent at the provider; svc's AuthnRequest parsed (and its signature checked) by samlify. */
async function start(idpId: string): Promise<Started> {
  const out = await ok(t, "connect", login.pat, "StartIdentityProviderIntent", { idpId, urls: { successUrl: SUCCESS, failureUrl: FAILURE } });
  return { intentId: out.idpIntentId, parsed: await ext.parseRequest({ url: out.authUrl }) };
}

/** Posts a Response (base64) to svc's ACS with the intent's RelayState; where svc sends the browser. */
async function answer(s: Started, samlResponse: string): Promise<{ status: number; url: URL }> {
  const acs = s.parsed.sp.entityMeta.getAssertionConsumerService("post") as string;
  const res = await postTo(acs, { SAMLResponse: samlResponse, RelayState: s.parsed.relayState });
  return { status: res.status, url: new URL(res.headers.get("location") ?? `about:${res.status}`) };
}

/** The Response's XML changed by `edit`, posted. */
async function answerXml(s: Started, edit: (xml: string) => string, who = user("edited")): Promise<{ status: number; url: URL }> {
  const xml = Buffer.from(await ext.response(s.parsed, who), "base64").toString();
  return answer(s, b64(edit(xml)));
}

function expectRefused(r: { status: number; url: URL }, error: string, description: RegExp): void {
  expect(r.status).toBe(303);
  expect(`${r.url.origin}${r.url.pathname}`).toBe(FAILURE);
  expect(r.url.searchParams.get("token")).toBeNull();
  expect({ error: r.url.searchParams.get("error"), description: r.url.searchParams.get("error_description") }).toEqual({
    error,
    description: expect.stringMatching(description),
  });
}

/** A session from the intent of a successful answer (the user it names). */
async function sessionUser(intentId: string, landing: URL): Promise<string> {
  const token = landing.searchParams.get("token") as string;
  const created = await ok(t, "connect", login.pat, "CreateSession", { checks: { idpIntent: { idpIntentId: intentId, idpIntentToken: token } } });
  const session = await ok(t, "connect", login.pat, "GetSession", { sessionId: created.sessionId, sessionToken: created.sessionToken });
  return session.session.factors.user.id;
}

beforeAll(async () => {
  const port = await freePort();
  t = await startTestServer({ SVC_PORT: String(port), SVC_EXTERNAL_URL: `http://127.0.0.1:${port}` });
  ext = await startSamlifyIdp();
  orgId = (await admin(t, "GetInstance")).instance.defaultOrganizationId;
  login = await loginClient(t, orgId, "login-saml");
  jit = await samlProvider("Corp SAML", {
    withSignedRequest: true,
    options: { isLinkingAllowed: true, isCreationAllowed: true, isAutoCreation: true, isAutoUpdate: true },
  });
  const projectId = await project(t, orgId, "Portal");
  const app = await oidcApp(t, projectId, "portal", { redirectUris: [RP] });
  clientId = app.clientId;
  config = await discover(t, app.clientId, app.clientSecret, oidc.ClientSecretBasic(app.clientSecret));
}, 180_000);
afterAll(async () => {
  await ext?.close();
  await t?.stop();
});

/** A browser without a browser: the hosted login's cookie and the CSRF token of the last page. */
class Visitor {
  cookie = "";
  csrf = "";
  async go(url: string, init: RequestInit = {}): Promise<{ res: Response; body: string }> {
    const own = url.startsWith(t.url);
    const res = await fetch(url, { redirect: "manual", ...init, headers: { ...(init.headers as Record<string, string>), ...(own ? { cookie: this.cookie } : {}) } });
    const set = own ? res.headers.getSetCookie().find((c) => c.startsWith("svc-login=")) : undefined;
    if (set) this.cookie = set.slice(0, set.indexOf(";"));
    const body = await res.text();
    const m = /name="_csrf" value="([^"]+)"/.exec(body);
    if (m && own) this.csrf = m[1] as string;
    return { res, body };
  }
  post(url: string, fields: Record<string, string>) {
    return this.go(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields) });
  }
}

describe("a brokered sign-in through the hosted login", () => {
  it("offers the SAML provider, signs in there, creates the user just in time, and the RP gets svc's code and tokens", async () => {
    ext.user = user("jit-anna", { firstName: "Anna", surName: "Broker" });
    const verifier = oidc.randomPKCECodeVerifier();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: RP,
      scope: "openid profile email",
      state: "st",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const authRequest = authRequestOf(await authorizeGet(t, Object.fromEntries(url.searchParams)));
    const v = new Visitor();
    const page = await v.go(`${t.url}/ui/login/login?authRequest=${authRequest}`);
    expect(page.body).toContain("Sign in with Corp SAML");
    const button = page.body.split("<form").find((f) => f.includes("Sign in with Corp SAML")) as string;
    const fields = formOf(`<form${button}`).fields;
    expect(fields.idp).toBe(jit);

    const started = await v.post(`${t.url}/ui/login/idp/start`, { ...fields, _csrf: v.csrf });
    const sso = new URL(started.res.headers.get("location") as string);
    expect(`${sso.origin}${sso.pathname}`).toBe(ext.ssoUrl);
    expect([...sso.searchParams.keys()]).toEqual(["SAMLRequest", "RelayState", "SigAlg", "Signature"]);
    // The IdP: samlify parses (schema, signature with svc's SP metadata) and answers with the auto-posting page.
    const atIdp = await v.go(sso.toString());
    expect(atIdp.res.status).toBe(200);
    const toAcs = formOf(atIdp.body);
    expect(toAcs.action).toBe(`${t.url}/idps/${jit}/saml/acs`);
    let step = await v.post(toAcs.action, toAcs.fields);
    expect(step.res.status).toBe(303);
    let location = new URL(step.res.headers.get("location") as string, t.url);
    expect(location.pathname).toBe("/ui/login/idp/success");
    for (let hops = 0; hops < 10 && location.href.startsWith(t.url); hops++) {
      step = await v.go(location.href);
      expect([302, 303]).toContain(step.res.status);
      location = new URL(step.res.headers.get("location") as string, t.url);
    }
    expect(`${location.origin}${location.pathname}`).toBe(RP);

    const tokens = await oidc.authorizationCodeGrant(config, location, { pkceCodeVerifier: verifier, expectedState: "st", idTokenExpected: true });
    const claims = tokens.claims() as Record<string, unknown>;
    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub as string);
    expect(info).toMatchObject({ email: "jit-anna@idp.example.test", given_name: "Anna", family_name: "Broker" });
    const created = await admin(t, "GetUserByID", { userId: claims.sub as string });
    expect(created.user.username).toBe("jit-anna");
    const links = await admin(t, "ListIDPLinks", { userId: claims.sub as string });
    expect(links.result).toEqual([{ idpId: jit, userId: "jit-anna@idp.example.test", userName: "jit-anna" }]);
    expect(clientId).toBeTruthy();
  });
});
