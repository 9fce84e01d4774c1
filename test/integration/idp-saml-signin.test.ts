// Brokering to an external SAML identity provider: samlify's IdentityProvider runs in the test on a loopback port
// (its SSO endpoint parses svc's AuthnRequest with samlify, which verifies svc's signature with the certificate of
// svc's SP metadata and validates the XML with xmllint against the OASIS schema, and answers with a signed Response
// posted to svc's ACS). Through the hosted login pages (fetch with a cookie jar) a user new to svc is created just in
// time and the relying party gets svc's own code and tokens; linking by NameID or by an attribute; the HTTP-POST
// binding; a Response signed instead of its Assertion. Then every refusal of a Response, each as its own test.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { freePort } from "../support/apache.js";
import { createOrg, type Machine, project } from "../support/fixtures.js";
import { authorizeGet, authRequestOf, discover, loginClient, oidc, oidcApp } from "../support/oidc.js";
import { admin, call, type Json, ok } from "../support/rpc.js";
import { nodeSamlSp, samlApp, samlRequestOf, spMetadata, ssoRedirect, xmlsecVerify, xsdValid } from "../support/saml.js";
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
    const res = await fetch(url, {
      redirect: "manual",
      ...init,
      headers: { ...(init.headers as Record<string, string>), ...(own ? { cookie: this.cookie } : {}) },
    });
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

/** Through the login page's button, the IdP and svc's ACS to the end of the hosted login: the last response. */
async function brokeredThroughPages(v: Visitor, flow: Record<string, string>, idpName: string): Promise<{ res: Response; body: string }> {
  const page = await v.go(`${t.url}/ui/login/login?${new URLSearchParams(flow)}`);
  const button = page.body.split("<form").find((f) => f.includes(`Sign in with ${idpName}<`)) as string;
  const started = await v.post(`${t.url}/ui/login/idp/start`, { ...formOf(`<form${button}`).fields, _csrf: v.csrf });
  const atIdp = await v.go(started.res.headers.get("location") as string);
  const toAcs = formOf(atIdp.body);
  let step = await v.post(toAcs.action, toAcs.fields);
  for (let hops = 0; hops < 10 && step.res.status === 303; hops++) {
    const next = new URL(step.res.headers.get("location") as string, t.url);
    if (!next.href.startsWith(t.url)) break;
    step = await v.go(next.href);
  }
  return step;
}

describe("a brokered sign-in for svc's own SAML service provider", () => {
  it("ends in svc's signed assertion at the SP (node-saml, strict), for the user created from the external IdP", async () => {
    const spEntityId = "https://sp.broker.example.com/metadata";
    const acsUrl = "https://sp.broker.example.com/acs";
    await samlApp(t, await project(t, orgId, "Broker SAML app"), "broker-sp", spMetadata({ entityId: spEntityId, acs: [{ url: acsUrl, isDefault: true }] }));
    const sp = await nodeSamlSp(t, spEntityId, acsUrl);
    const samlRequest = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("relay-broker", undefined, {})));
    ext.user = user("saml-sam", { firstName: "Sam", surName: "Chain" });
    const last = await brokeredThroughPages(new Visitor(), { samlRequest }, "Corp SAML");
    expect(last.res.status).toBe(200);
    const toSp = formOf(last.body);
    expect(toSp.action).toBe(acsUrl);
    const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: toSp.fields.SAMLResponse as string, RelayState: "relay-broker" });
    expect(profile).toMatchObject({ nameID: "saml-sam@idp.example.test", FirstName: "Sam", SurName: "Chain" });
  });
});

describe("linking and the provider's settings", () => {
  it("svc's AuthnRequest is signed over the query: samlify refuses it with the signature changed", async () => {
    const out = await ok(t, "connect", login.pat, "StartIdentityProviderIntent", { idpId: jit, urls: { successUrl: SUCCESS, failureUrl: FAILURE } });
    const url = new URL(out.authUrl);
    const request = url.searchParams.get("SAMLRequest") as string;
    expect(url.searchParams.get("SigAlg")).toBe("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256");
    const signature = Buffer.from(url.searchParams.get("Signature") as string, "base64");
    signature[10] = (signature[10] as number) ^ 1;
    url.searchParams.set("Signature", signature.toString("base64"));
    await expect(ext.parseRequest({ url: url.toString() })).rejects.toThrow();
    // And a request whose signed octets changed (another RelayState).
    const relayed = new URL(out.authUrl);
    relayed.searchParams.set("RelayState", "another");
    await expect(ext.parseRequest({ url: relayed.toString() })).rejects.toThrow();
    expect(request.length).toBeGreaterThan(0);
  });

  it("signs in the svc user linked to the NameID, and updates its profile from the attributes (auto-update)", async () => {
    const local = (
      await admin(t, "CreateUser", {
        organizationId: orgId,
        username: "linked-lena",
        human: { profile: { givenName: "Lena", familyName: "Old" }, email: { email: "lena@a.example", isVerified: true } },
      })
    ).id;
    await admin(t, "AddIDPLink", { userId: local, idpLink: { idpId: jit, userId: "lena@idp.example.test", userName: "lena" } });
    const s = await start(jit);
    const landed = await answer(s, await ext.response(s.parsed, user("lena", { firstName: "Lena", surName: "New" })));
    expect(landed.status).toBe(303);
    expect(`${landed.url.origin}${landed.url.pathname}`).toBe(SUCCESS);
    expect(landed.url.searchParams.get("user")).toBe(local);
    const info = await ok(t, "connect", login.pat, "RetrieveIdentityProviderIntent", {
      idpIntentId: s.intentId,
      idpIntentToken: landed.url.searchParams.get("token") as string,
    });
    expect(info.userId).toBe(local);
    expect(info.idpInformation).toMatchObject({
      idpId: jit,
      userId: "lena@idp.example.test",
      userName: "lena",
      rawInformation: { NameID: "lena@idp.example.test", Email: "lena@idp.example.test", SurName: "New" },
      profile: { email: "lena@idp.example.test", givenName: "Lena", familyName: "New", preferredUsername: "lena" },
    });
    expect(await sessionUser(s.intentId, landed.url)).toBe(local);
    const after = await admin(t, "GetUserByID", { userId: local });
    expect(after.user.human.profile.familyName).toBe("New");
  });

  it("identifies users by the configured attribute instead of the NameID (transient NameIDs)", async () => {
    const byAttribute = await samlProvider("Corp SAML (employee number)", {
      nameIdFormat: "SAML_NAME_ID_FORMAT_TRANSIENT",
      transientMappingAttributeName: "employeeNumber",
      options: { isLinkingAllowed: true },
    });
    const local = (
      await admin(t, "CreateUser", {
        organizationId: orgId,
        username: "emp-emil",
        human: { profile: { givenName: "Emil", familyName: "Emp" }, email: { email: "emil@a.example", isVerified: true } },
      })
    ).id;
    await admin(t, "AddIDPLink", { userId: local, idpLink: { idpId: byAttribute, userId: "E-4711", userName: "emil" } });
    const s = await start(byAttribute);
    expect(s.parsed.info.samlContent).toContain('Format="urn:oasis:names:tc:SAML:2.0:nameid-format:transient"');
    const landed = await answer(s, await ext.response(s.parsed, user("emil", { nameId: "_transient-1", employeeNumber: "E-4711" })));
    expect(landed.url.searchParams.get("user")).toBe(local);
    expect(await sessionUser(s.intentId, landed.url)).toBe(local);

    // Without the attribute there is no user to name.
    const missing = await start(byAttribute);
    expectRefused(await answer(missing, await ext.response(missing.parsed, user("emil", { nameId: "_transient-2" }))), "invalid_response", /employeeNumber/);
  });

  it("a provider's user with no link and no creation allowed gets no session", async () => {
    const closed = await samlProvider("Closed SAML", { options: {} });
    const s = await start(closed);
    const landed = await answer(s, await ext.response(s.parsed, user("stranger")));
    expect(landed.url.searchParams.get("user")).toBeNull();
    const token = landed.url.searchParams.get("token") as string;
    const reply = await call(t, "connect", login.pat, "CreateSession", { checks: { idpIntent: { idpIntentId: s.intentId, idpIntentToken: token } } });
    expect({ code: reply.code, reason: reply.reason }).toEqual({ code: "failed_precondition", reason: "Errors.IdpIntent.UserNotLinked" });
  });

  it("sends the AuthnRequest with the HTTP-POST binding, signed inside, when the provider is set so", async () => {
    const viaPost = await samlProvider("Corp SAML (POST)", {
      binding: "SAML_BINDING_POST",
      options: { isCreationAllowed: true, isAutoCreation: true },
    });
    const out = await ok(t, "connect", login.pat, "StartIdentityProviderIntent", { idpId: viaPost, urls: { successUrl: SUCCESS, failureUrl: FAILURE } });
    expect(out.authUrl ?? "").toBe("");
    const form = formOf(Buffer.from(out.postForm, "base64").toString());
    expect(form.action).toBe(ext.ssoUrl);
    const xml = Buffer.from(form.fields.SAMLRequest as string, "base64").toString();
    expect(xml).toContain("<ds:Signature");
    // xmlsec1 verifies the signature with svc's certificate alone; a changed value no longer verifies.
    const svcCert = await (await fetch(`${t.url}/saml/v2/certificate`)).text();
    expect(await xmlsecVerify(xml, svcCert, "AuthnRequest")).toBe(true);
    expect(await xmlsecVerify(xml.replace('AllowCreate="true"', 'AllowCreate="false"'), svcCert, "AuthnRequest")).toBe(false);
    expect((await xsdValid(xml, "protocol")).ok).toBe(true);
    // The IdP's SSO endpoint takes the form as a browser would post it, and answers with its own form to the ACS.
    ext.user = user("post-paul");
    const atIdp = await postTo(form.action, form.fields);
    expect(atIdp.status).toBe(200);
    const toAcs = formOf(await atIdp.text());
    const landed = await postTo(toAcs.action, toAcs.fields);
    const url = new URL(landed.headers.get("location") as string);
    expect(`${url.origin}${url.pathname}`).toBe(SUCCESS);
    const created = await sessionUser(out.idpIntentId, url);
    expect((await admin(t, "GetUserByID", { userId: created })).user.username).toBe("post-paul");
  });

  it("accepts a Response signed as a whole instead of its Assertion", async () => {
    const s = await start(jit);
    const xml = Buffer.from(await ext.response(s.parsed, user("whole-wanda"), {}, { sign: "response" }), "base64").toString();
    expect(xml.indexOf("<ds:Signature")).toBeLessThan(xml.indexOf("<saml:Assertion"));
    expect(xml.match(/<ds:Signature[ >]/g)).toHaveLength(1);
    const landed = await answer(s, b64(xml));
    expect(`${landed.url.origin}${landed.url.pathname}`).toBe(SUCCESS);
    expect((await admin(t, "GetUserByID", { userId: await sessionUser(s.intentId, landed.url) })).user.username).toBe("whole-wanda");
  });

  it("accepts a Response signed as a whole and in its Assertion, and refuses it with a value or a signature changed", async () => {
    const s = await start(jit);
    const xml = Buffer.from(await ext.response(s.parsed, user("both-bert"), {}, { sign: "both" }), "base64").toString();
    expect(xml.match(/<ds:Signature[ >]/g)).toHaveLength(2);
    const landed = await answer(s, b64(xml));
    expect(`${landed.url.origin}${landed.url.pathname}`).toBe(SUCCESS);
    const changes: ((x: string) => string)[] = [
      (x) => x.replace(/<saml:NameID([^>]*)>[^<]*</, "<saml:NameID$1>admin@idp.example.test<"),
      // The Response's SignatureValue (the first one), then the Assertion's (the Response's signature covers it).
      (x) => x.replace(/<ds:SignatureValue>(.)/, (_, c: string) => `<ds:SignatureValue>${c === "A" ? "B" : "A"}`),
      (x) => x.replace(/(<saml:Assertion[\s\S]*<ds:SignatureValue>)(.)/, (_, head: string, c: string) => `${head}${c === "A" ? "B" : "A"}`),
    ];
    for (const change of changes) {
      const next = await start(jit);
      const signed = Buffer.from(await ext.response(next.parsed, user("both-bert"), {}, { sign: "both" }), "base64").toString();
      expect(change(signed)).not.toBe(signed);
      expectRefused(await answer(next, b64(change(signed))), "invalid_response", /does not verify/);
    }
  });
});

describe("an organization's own SAML provider", () => {
  it("creates its users in that organization, and is offered on that organization's login only", async () => {
    const orgB = await createOrg(t, "Broker Org B");
    const own = await samlProvider("Org B SAML", { organizationId: orgB, options: { isCreationAllowed: true, isAutoCreation: true } });
    const s = await start(own);
    const landed = await answer(s, await ext.response(s.parsed, user("org-otto")));
    const created = await admin(t, "GetUserByID", { userId: await sessionUser(s.intentId, landed.url) });
    expect(created.user).toMatchObject({ username: "org-otto", details: { resourceOwner: orgB } });
    const list = await admin(t, "ListIdentityProviders", {});
    expect(list.result.map((p: Json) => p.id)).not.toContain(own);
    const listB = await admin(t, "ListIdentityProviders", { organizationId: orgB });
    expect(listB.result.map((p: Json) => p.id)).toContain(own);
  });
});

describe("refused Responses", () => {
  it("refuses an unsigned Response", async () => {
    const s = await start(jit);
    expectRefused(
      await answerXml(s, (x) => x.replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/g, "")),
      "invalid_response",
      /neither the Response nor its Assertion is signed/,
    );
  });

  it("refuses a Response signed with a key other than the registered certificate's (KeyInfo is never used)", async () => {
    const forger = await startSamlifyIdp({ entityId: ext.entityId });
    try {
      const s = await start(jit);
      const forged = Buffer.from(await forger.response(s.parsed, user("forged")), "base64").toString();
      // The forger's certificate travels in KeyInfo: svc must not use it.
      expect(forged).toContain(forger.keys.certB64.slice(0, 40));
      expectRefused(await answer(s, b64(forged)), "invalid_response", /does not verify with the identity provider's registered certificates/);
    } finally {
      await forger.close();
    }
  });

  it("refuses a Response signed with RSA-SHA1, even with the registered key", async () => {
    const sha1 = await startSamlifyIdp({ entityId: ext.entityId, keys: ext.keys, signatureAlgorithm: "http://www.w3.org/2000/09/xmldsig#rsa-sha1" });
    try {
      const s = await start(jit);
      const response = Buffer.from(await sha1.response(s.parsed, user("sha1")), "base64").toString();
      expect(response).toContain('Algorithm="http://www.w3.org/2000/09/xmldsig#rsa-sha1"');
      expectRefused(await answer(s, b64(response)), "invalid_response", /does not verify/);
    } finally {
      await sha1.close();
    }
  });

  it("refuses wrapped signatures: the signed Assertion moved aside and another one in its place", async () => {
    // XSW: an evil Assertion (another NameID, the original's signature copied) where the signed one was; the signed
    // one hidden in the Response's Extensions.
    const s1 = await start(jit);
    expectRefused(
      await answerXml(s1, (x) => {
        const assertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(x)?.[0] as string;
        const evil = assertion.replace(/ID="[^"]+"/, 'ID="_evil"').replace(/<saml:NameID([^>]*)>[^<]*</, "<saml:NameID$1>admin@idp.example.test<");
        return x.replace(assertion, `${evil}`).replace("<samlp:Status>", `<samlp:Extensions>${assertion}</samlp:Extensions><samlp:Status>`);
      }),
      "invalid_response",
      /exactly one Assertion/,
    );
    // The same without hiding: two Assertions side by side, the evil one first.
    const s2 = await start(jit);
    expectRefused(
      await answerXml(s2, (x) => {
        const assertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(x)?.[0] as string;
        const evil = assertion.replace(/ID="[^"]+"/, 'ID="_evil"').replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/, "");
        return x.replace(assertion, `${evil}${assertion}`);
      }),
      "invalid_response",
      /exactly one Assertion/,
    );
    // And the signed Assertion changed in place: its digest no longer matches.
    const s3 = await start(jit);
    expectRefused(
      await answerXml(s3, (x) => x.replace(/<saml:NameID([^>]*)>[^<]*</, "<saml:NameID$1>admin@idp.example.test<")),
      "invalid_response",
      /does not verify/,
    );
  });

  it("refuses an Assertion for another audience", async () => {
    const s = await start(jit);
    expectRefused(
      await answer(s, await ext.response(s.parsed, user("aud"), { Audience: "https://other-sp.example.com" })),
      "invalid_response",
      /AudienceRestriction/,
    );
  });

  it("refuses an expired Assertion", async () => {
    const s = await start(jit);
    const past = (ms: number) => new Date(Date.now() - ms).toISOString();
    const values = {
      ConditionsNotBefore: past(20 * 60_000),
      ConditionsNotOnOrAfter: past(10 * 60_000),
      SubjectConfirmationDataNotOnOrAfter: past(10 * 60_000),
    };
    expectRefused(await answer(s, await ext.response(s.parsed, user("late"), values)), "invalid_response", /expired/);
  });

  it("refuses an Assertion that is not valid yet (beyond the clock skew)", async () => {
    const s = await start(jit);
    expectRefused(
      await answer(s, await ext.response(s.parsed, user("early"), { ConditionsNotBefore: new Date(Date.now() + 10 * 60_000).toISOString() })),
      "invalid_response",
      /not valid yet/,
    );
  });

  it("refuses a replayed Response: once to the same intent, and to another one", async () => {
    const s = await start(jit);
    const response = await ext.response(s.parsed, user("replay-rita"));
    const first = await answer(s, response);
    expect(`${first.url.origin}${first.url.pathname}`).toBe(SUCCESS);
    expectRefused(await answer(s, response), "invalid_state", /finished already/);
    const other = await start(jit);
    expectRefused(await answer(other, response), "invalid_response", /InResponseTo/);
  });

  it("refuses a Response to another AuthnRequest (InResponseTo)", async () => {
    const s = await start(jit);
    expectRefused(await answer(s, await ext.response(s.parsed, user("irt"), { InResponseTo: "_another-request" })), "invalid_response", /InResponseTo/);
    // The signed Assertion's SubjectConfirmationData too (the Response around it may be unsigned).
    const s2 = await start(jit);
    expectRefused(
      await answer(s2, await ext.response(s2.parsed, user("irt"), { SubjectInResponseTo: "_another-request" })),
      "invalid_response",
      /answers another AuthnRequest/,
    );
  });

  it("refuses an Assertion whose bearer confirmation answers no request (it could answer any)", async () => {
    const s = await start(jit);
    const response = await ext.response(s.parsed, user("any"), {}, { template: (x) => x.replace(' InResponseTo="{SubjectInResponseTo}"', "") });
    expect(Buffer.from(response, "base64").toString()).not.toMatch(/SubjectConfirmationData[^>]*InResponseTo/);
    expectRefused(await answer(s, response), "invalid_response", /has no InResponseTo/);
  });

  it("refuses a Response for another Destination, and an Assertion for another Recipient", async () => {
    const s = await start(jit);
    expectRefused(
      await answer(s, await ext.response(s.parsed, user("dest"), { Destination: "https://evil.example.com/acs" })),
      "invalid_response",
      /Destination/,
    );
    const s2 = await start(jit);
    expectRefused(
      await answer(s2, await ext.response(s2.parsed, user("dest"), { SubjectRecipient: "https://evil.example.com/acs" })),
      "invalid_response",
      /Recipient/,
    );
  });

  it("refuses an Assertion with a condition svc does not understand (signed as such)", async () => {
    const s = await start(jit);
    const condition = '<saml:Condition xmlns:x="urn:example:conditions" xsi:type="x:GeoFence"/>';
    const response = await ext.response(
      s.parsed,
      user("cond"),
      {},
      { template: (x) => x.replace("</saml:AudienceRestriction>", `</saml:AudienceRestriction>${condition}`) },
    );
    expect(Buffer.from(response, "base64").toString()).toContain("GeoFence");
    expectRefused(await answer(s, response), "invalid_response", /condition this service provider does not understand \(Condition\)/);
    // OneTimeUse is understood: an intent takes one answer anyway.
    const s2 = await start(jit);
    const once = await ext.response(
      s2.parsed,
      user("once-olga"),
      {},
      { template: (x) => x.replace("</saml:AudienceRestriction>", "</saml:AudienceRestriction><saml:OneTimeUse/>") },
    );
    const landed = await answer(s2, once);
    expect(`${landed.url.origin}${landed.url.pathname}`).toBe(SUCCESS);
  });

  it("refuses an Assertion from another issuer", async () => {
    const s = await start(jit);
    expectRefused(
      await answer(s, await ext.response(s.parsed, user("iss"), { AssertionIssuer: "https://other-idp.example.com" })),
      "invalid_response",
      /Issuer/,
    );
  });

  it("refuses a Response with a DOCTYPE (no entity is ever expanded)", async () => {
    const s = await start(jit);
    expectRefused(
      await answerXml(s, (x) => `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${x.replace("ext-user", "&x;")}`),
      "invalid_response",
      /DOCTYPE/,
    );
  });

  it("refuses an oversized Response with 413, before reading it", async () => {
    const s = await start(jit);
    const acs = s.parsed.sp.entityMeta.getAssertionConsumerService("post") as string;
    const res = await postTo(acs, { SAMLResponse: "A".repeat(600_000), RelayState: s.parsed.relayState });
    expect(res.status).toBe(413);
    // A Response under the form limit but over the XML limit fails the intent.
    const big = await answerXml(s, (x) => x.replace("<saml:AttributeStatement>", `<saml:AttributeStatement><!--${"x".repeat(140_000)}-->`));
    expectRefused(big, "invalid_response", /larger than/);
  });

  it("turns a Status other than Success into a failed intent", async () => {
    const s = await start(jit);
    expectRefused(
      await answer(s, await ext.response(s.parsed, user("status"), { StatusCode: "urn:oasis:names:tc:SAML:2.0:status:Responder" })),
      "access_denied",
      /did not sign the user in: urn:oasis:names:tc:SAML:2.0:status:Responder/,
    );
  });

  it("answers an unknown RelayState, or one of another provider, with an error page", async () => {
    const s = await start(jit);
    const response = await ext.response(s.parsed, user("nobody"));
    const acs = s.parsed.sp.entityMeta.getAssertionConsumerService("post") as string;
    for (const relayState of ["", "unknown-relay-state", "\u0000\u0000", "a b", "x".repeat(201)]) {
      const res = await postTo(acs, { SAMLResponse: response, RelayState: relayState });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain("Sign-in failed");
    }
    const other = await samlProvider("Other SAML", { options: {} });
    const res = await postTo(acs.replace(jit, other), { SAMLResponse: response, RelayState: s.parsed.relayState });
    expect(res.status).toBe(400);
    // Nor does the OpenID callback take a SAML intent's state.
    const callback = await fetch(`${t.url}/idps/callback?state=${encodeURIComponent(s.parsed.relayState)}&code=forged`, { redirect: "manual" });
    expect(callback.status).toBe(400);
    // The intent is untouched: the right ACS still takes the Response.
    const landed = await answer(s, response);
    expect(`${landed.url.origin}${landed.url.pathname}`).toBe(SUCCESS);
  });

  it("answers malformed posts with a 4xx page or the failure URL, never a 5xx", async () => {
    const relay = "RELAY";
    const bodies: [string, string][] = [
      ["application/x-www-form-urlencoded", `SAMLResponse=${"%FF".repeat(50)}&RelayState=${relay}`],
      ["application/x-www-form-urlencoded", `SAMLResponse=not-base64!&RelayState=${relay}`],
      ["application/x-www-form-urlencoded", `SAMLResponse=${b64("\u0000\u0001<x")}&RelayState=${relay}`],
      ["application/x-www-form-urlencoded", `RelayState=${relay}&RelayState=${relay}`],
      ["application/x-www-form-urlencoded", `SAMLResponse=${b64("<samlp:Response/>")}`],
      ["application/x-www-form-urlencoded", `${"a=1&".repeat(100)}RelayState=x`],
      ["text/plain", "SAMLResponse=x"],
      ["application/x-www-form-urlencoded", ""],
    ];
    for (const [type, template] of bodies) {
      // Each on its own intent: a refusal spends the intent, and the next one would only meet that.
      const s = await start(jit);
      const acs = s.parsed.sp.entityMeta.getAssertionConsumerService("post") as string;
      const body = template.replaceAll(relay, encodeURIComponent(s.parsed.relayState));
      const res = await fetch(acs, { method: "POST", redirect: "manual", headers: { "content-type": type }, body });
      expect({ body: body.slice(0, 40), status: res.status < 500 }).toEqual({ body: body.slice(0, 40), status: true });
    }
  });

  it("refuses a Response to an intent that is over (10 minutes)", async () => {
    const s = await start(jit);
    const response = await ext.response(s.parsed, user("slow-sid"));
    t.advanceClock(11 * 60_000);
    try {
      expectRefused(await answer(s, response), "expired", /took too long/);
    } finally {
      t.advanceClock(-11 * 60_000);
    }
  });
});

describe("concurrency", () => {
  it("answers 12 sign-ins at once, each for its own user, and a Response raced against itself once", async () => {
    const names = Array.from({ length: 12 }, (_, i) => `many-${i}`);
    const results = await Promise.all(
      names.map(async (name) => {
        const s = await start(jit);
        const landed = await answer(s, await ext.response(s.parsed, user(name)));
        return { name, url: landed.url, userId: await sessionUser(s.intentId, landed.url) };
      }),
    );
    for (const r of results) expect((await admin(t, "GetUserByID", { userId: r.userId })).user.username).toBe(r.name);
    expect(new Set(results.map((r) => r.userId)).size).toBe(names.length);

    const s = await start(jit);
    const response = await ext.response(s.parsed, user("raced-rolf"));
    const raced = await Promise.all(Array.from({ length: 5 }, () => answer(s, response)));
    expect(raced.filter((r) => `${r.url.origin}${r.url.pathname}` === SUCCESS)).toHaveLength(1);
    for (const r of raced.filter((x) => `${x.url.origin}${x.url.pathname}` !== SUCCESS)) expect(r.url.searchParams.get("error")).toBe("invalid_state");
  });
});
