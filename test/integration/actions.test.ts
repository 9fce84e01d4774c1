// Actions: targets and executions administered through ActionService (the instance's owners only), and the three
// functions run against a real endpoint on this machine: preuserinfo (the ID token, userinfo, introspection),
// preaccesstoken (JWT access tokens, through openid-client) and presamlresponse (the attributes node-saml reads from a
// signed assertion). The endpoint checks every request's Svc-Signature with the key CreateTarget showed once.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { decodeJwt } from "jose";
import { createHuman, defaultOrgId, type Machine, machine, project } from "../support/fixtures.js";
import { codeFlow, discover, loginClient, type OidcApp, oidc, oidcApp, signIn } from "../support/oidc.js";
import { admin, call, fails, type Json, ok } from "../support/rpc.js";
import { createResponse, idpCertificate, nodeSamlSp, responseXml, samlApp, samlRequestOf, spMetadata, ssoRedirect, xmlsecVerify } from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

interface Received {
  path: string;
  body: Json;
  signature: string;
  raw: string;
}

let t: TestServer;
let orgId: string;
let login: Machine;
let projectId: string;
let aliceId: string;
let alice: string;
let endpoint: Server;
let base: string;
const received: Received[] = [];
/** What each path answers: a status and a JSON body, or "hang" (never answers). */
const answers = new Map<string, { status: number; body: unknown } | "hang">();

function serve(req: IncomingMessage, res: ServerResponse): void {
  let raw = "";
  req.on("data", (c: Buffer) => {
    raw += c.toString("utf8");
  });
  req.on("end", () => {
    const path = req.url ?? "/";
    received.push({ path, body: JSON.parse(raw) as Json, signature: String(req.headers["svc-signature"] ?? ""), raw });
    const a = answers.get(path) ?? { status: 200, body: {} };
    if (a === "hang") return;
    res.writeHead(a.status, { "content-type": "application/json" }).end(JSON.stringify(a.body));
  });
}

/** Whether `header` is the Svc-Signature of `raw` under `key` (base64url), within five minutes. */
function signedBy(key: string, raw: string, header: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  const t0 = Number(m[1]);
  if (Math.abs(Date.now() / 1000 - t0) > 300) return false;
  const expected = createHmac("sha256", Buffer.from(key, "base64url")).update(`${t0}.${raw}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2] as string, "hex"));
}

async function target(name: string, path: string, extra: Json = {}): Promise<{ id: string; key: string }> {
  const out = await admin(t, "CreateTarget", { name, endpoint: `${base}${path}`, ...extra });
  return { id: out.id, key: out.signingKey };
}

beforeAll(async () => {
  endpoint = createServer(serve);
  await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;
  t = await startTestServer({ SVC_ACTIONS_ALLOW_PRIVATE: "true" });
  orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "actions-login-ui");
  projectId = await project(t, orgId, "Actions Project", ["reader"]);
  aliceId = await createHuman(t, orgId, "actions-alice");
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  alice = `actions-alice@${domain}`;
  await admin(t, "AddUserGrant", { userId: aliceId, projectId, roleKeys: ["reader"] });
  await admin(t, "SetUserMetadata", { userId: aliceId, metadata: [{ key: "department", value: Buffer.from("R&D").toString("base64") }] });
}, 120_000);
afterAll(async () => {
  // Clear every execution so that the server's shutdown calls nothing.
  for (const fn of ["preuserinfo", "preaccesstoken", "presamlresponse"]) await admin(t, "SetExecution", { function: fn, targetIds: [] }).catch(() => {});
  await t?.stop();
  endpoint?.closeAllConnections();
  endpoint?.close();
});

describe("ActionService", () => {
  it("creates a target with a signing key shown once, reads, lists, updates, rotates and deletes it", async () => {
    const created = await admin(t, "CreateTarget", { name: "admin-crud", endpoint: "https://actions.example.com/hook", timeout: "5s", interruptOnError: true });
    expect(created.signingKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const read = (await admin(t, "GetTarget", { id: created.id })).target;
    expect(read).toMatchObject({ id: created.id, name: "admin-crud", endpoint: "https://actions.example.com/hook", timeout: "5s", interruptOnError: true });
    expect(JSON.stringify(read)).not.toContain(created.signingKey);
    // At rest the key is sealed with the master key: the stored bytes are not the key.
    const row = await t.server.tokens.store.actions.findTarget(t.server.instanceId, created.id);
    expect(Buffer.from(row?.signingKeyEnc ?? []).includes(Buffer.from(created.signingKey, "base64url"))).toBe(false);
    const listed = await admin(t, "ListTargets", { query: { asc: true } });
    expect(listed.result.map((x: Json) => x.id)).toContain(created.id);
    expect(JSON.stringify(listed)).not.toContain(created.signingKey);

    const renamed = await admin(t, "UpdateTarget", { id: created.id, name: "admin-crud-2", timeout: "2.5s" });
    expect(renamed.signingKey ?? "").toBe("");
    expect((await admin(t, "GetTarget", { id: created.id })).target).toMatchObject({ name: "admin-crud-2", timeout: "2.500s", interruptOnError: true });
    const rotated = await admin(t, "UpdateTarget", { id: created.id, rotateSigningKey: true });
    expect(rotated.signingKey).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(rotated.signingKey).not.toBe(created.signingKey);

    await admin(t, "SetExecution", { function: "preaccesstoken", targetIds: [created.id] });
    expect((await admin(t, "ListExecutions", {})).result).toEqual([expect.objectContaining({ function: "preaccesstoken", targetIds: [created.id] })]);
    expect((await admin(t, "ListExecutionFunctions", {})).functions).toEqual(["preuserinfo", "preaccesstoken", "presamlresponse"]);
    // Deleting the target takes it out of the execution (which, left empty, goes).
    await admin(t, "DeleteTarget", { id: created.id });
    expect((await admin(t, "ListExecutions", {})).result ?? []).toEqual([]);
    await fails(t, "rest", t.pat, "GetTarget", { id: created.id }, "not_found", "Errors.Action.Target.NotFound");
    const events = await admin(t, "ListEvents", { aggregateType: "action_target", aggregateId: created.id });
    expect(events.result.map((e: Json) => e.type)).toEqual(expect.arrayContaining(["action.target.added", "action.target.changed", "action.target.removed"]));
    expect(JSON.stringify(events)).not.toContain(created.signingKey);
  });

  it("refuses bad input with InvalidArgument, a taken name with AlreadyExists, unknown targets with NotFound", async () => {
    const bad = async (req: Json, reason: string) =>
      fails(t, "rest", t.pat, "CreateTarget", { name: "bad", endpoint: "https://ok.example.com", ...req }, "invalid_argument", reason);
    await bad({ endpoint: "http://actions.example.com/hook" }, "Errors.Action.Target.Endpoint.Invalid");
    await bad({ endpoint: "ftp://actions.example.com/hook" }, "Errors.Action.Target.Endpoint.Invalid");
    await bad({ endpoint: "https://user:pw@actions.example.com/hook" }, "Errors.Action.Target.Endpoint.Invalid");
    await bad({ endpoint: "not a url" }, "Errors.Action.Target.Endpoint.Invalid");
    await bad({ endpoint: "" }, "Errors.Action.Target.Endpoint.Missing");
    await bad({ name: "  " }, "Errors.Action.Target.Name.Missing");
    await bad({ timeout: "0.5s" }, "Errors.Action.Target.Timeout.Invalid");
    await bad({ timeout: "31s" }, "Errors.Action.Target.Timeout.Invalid");
    await bad({ timeout: "1.0000005s" }, "Errors.Action.Target.Timeout.Invalid");
    const first = await target("taken-name", "/taken");
    await fails(
      t,
      "rest",
      t.pat,
      "CreateTarget",
      { name: "taken-name", endpoint: "https://other.example.com" },
      "already_exists",
      "Errors.Action.Target.AlreadyExists",
    );
    const second = await target("taken-name-2", "/taken");
    await fails(t, "rest", t.pat, "UpdateTarget", { id: second.id, name: "taken-name" }, "already_exists", "Errors.Action.Target.AlreadyExists");
    await fails(t, "rest", t.pat, "SetExecution", { function: "preuserinfo", targetIds: ["nope"] }, "not_found", "Errors.Action.Target.NotFound");
    await fails(
      t,
      "rest",
      t.pat,
      "SetExecution",
      { function: "request", targetIds: [first.id] },
      "invalid_argument",
      "Errors.Action.Execution.Function.Invalid",
    );
    await fails(
      t,
      "rest",
      t.pat,
      "SetExecution",
      { function: "preuserinfo", targetIds: [first.id, first.id] },
      "invalid_argument",
      "Errors.Action.Execution.Targets.Duplicate",
    );
    await fails(t, "rest", t.pat, "UpdateTarget", { id: "nope", name: "x" }, "not_found", "Errors.Action.Target.NotFound");
    await fails(t, "rest", t.pat, "DeleteTarget", { id: "nope" }, "not_found", "Errors.Action.Target.NotFound");
    expect((await admin(t, "ListExecutions", {})).result ?? []).toEqual([]);
    await admin(t, "DeleteTarget", { id: first.id });
    await admin(t, "DeleteTarget", { id: second.id });
  });

  it("the instance's targets and functions are the instance owners' alone: organization owners and login clients are refused, viewers only read", async () => {
    const orgOwner = await machine(t, orgId, "actions-org-owner", ["ORG_OWNER"]);
    const viewer = await machine(t, orgId, "actions-viewer");
    await admin(t, "AddInstanceMember", { userId: viewer.userId, roles: ["IAM_OWNER_VIEWER"] });
    const existing = await target("perm-target", "/perm");
    for (const who of [orgOwner, login]) {
      await fails(t, "rest", who.pat, "CreateTarget", { name: "x", endpoint: "https://x.example.com" }, "permission_denied");
      // An organization owner lists its organization's own targets (actions-events.test.ts): none of the instance's.
      if (who === login) await fails(t, "connect", who.pat, "ListTargets", {}, "permission_denied");
      else expect(((await ok(t, "connect", who.pat, "ListTargets", {})).result ?? []).map((x: Json) => x.id)).not.toContain(existing.id);
      await fails(t, "rest", who.pat, "GetTarget", { id: existing.id }, "permission_denied");
      await fails(t, "rest", who.pat, "SetExecution", { function: "preuserinfo", targetIds: [existing.id] }, "permission_denied");
      await fails(t, "rest", who.pat, "DeleteTarget", { id: existing.id }, "permission_denied");
    }
    expect((await ok(t, "rest", viewer.pat, "GetTarget", { id: existing.id })).target.name).toBe("perm-target");
    await ok(t, "connect", viewer.pat, "ListExecutions", {});
    await fails(t, "rest", viewer.pat, "UpdateTarget", { id: existing.id, rotateSigningKey: true }, "permission_denied");
    await fails(t, "rest", viewer.pat, "SetExecution", { function: "preuserinfo", targetIds: [existing.id] }, "permission_denied");
    expect((await call(t, "rest", undefined, "ListTargets", {})).code).toBe("unauthenticated");
    await admin(t, "DeleteTarget", { id: existing.id });
  });
});

/** svc_action_calls_total{function, outcome} on the server's /metrics. */
async function actionCalls(fn: string, outcome: string): Promise<number> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`svc_action_calls_total{function="${fn}",outcome="${outcome}"}`));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
}

/** The token endpoint answered 503 temporarily_unavailable (openid-client rejects with the response as the cause). */
async function unavailable(flow: Promise<unknown>): Promise<void> {
  const err = await flow.then(
    () => undefined,
    (e: unknown) => e,
  );
  const res = (err as { cause?: unknown } | undefined)?.cause;
  expect(res).toBeInstanceOf(Response);
  expect((res as Response).status).toBe(503);
  expect(await (res as Response).json()).toMatchObject({ error: "temporarily_unavailable", error_description: expect.stringContaining("hr") });
}

describe("preuserinfo and preaccesstoken", () => {
  let app: OidcApp;
  let key: string;
  let targetId: string;
  const config = () => discover(t, app.clientId, app.clientSecret, oidc.ClientSecretBasic(app.clientSecret));

  beforeAll(async () => {
    app = await oidcApp(t, projectId, "actions-app", { idTokenUserinfoAssertion: true, accessTokenType: "ACCESS_TOKEN_TYPE_JWT" });
    answers.set("/claims", {
      status: 200,
      body: {
        append_claims: [
          { key: "department", value: "R&D" },
          { key: "entitlements", value: { level: 3, tags: ["a", "b"] } },
          { key: "sub", value: "someone-else" },
          { key: "email", value: "evil@example.com" },
          { key: "urn:svc:iam:org:project:roles", value: {} },
          { key: "nothing" },
        ],
        append_log_claims: ["checked by the HR system"],
      },
    });
    ({ id: targetId, key } = await target("hr", "/claims"));
    await admin(t, "SetExecution", { function: "preuserinfo", targetIds: [targetId] });
    await admin(t, "SetExecution", { function: "preaccesstoken", targetIds: [targetId] });
  });
  afterAll(async () => {
    await admin(t, "SetExecution", { function: "preuserinfo", targetIds: [] });
    await admin(t, "SetExecution", { function: "preaccesstoken", targetIds: [] });
  });

  it("adds the target's claims to the ID token, the JWT access token, userinfo and introspection, never replacing svc's", async () => {
    received.length = 0;
    const cfg = await config();
    const { tokens } = await codeFlow(t, cfg, login, alice, { scope: "openid profile email urn:svc:iam:user:metadata" });
    const idToken = decodeJwt(tokens.id_token as string);
    const log = "urn:svc:iam:action:hr:log";
    expect(idToken).toMatchObject({ sub: aliceId, email: "actions-alice@example.com", department: "R&D", entitlements: { level: 3, tags: ["a", "b"] } });
    expect(idToken[log]).toEqual([
      "claim sub is reserved: not set",
      "claim email is already set: not changed",
      "claim urn:svc:iam:org:project:roles is reserved: not set",
      expect.stringContaining("without a key"),
      "checked by the HR system",
    ]);
    expect(idToken.nothing).toBeUndefined();
    const accessToken = decodeJwt(tokens.access_token);
    expect(accessToken).toMatchObject({ sub: aliceId, client_id: app.clientId, department: "R&D" });
    // A JWT access token carries no e-mail claim of svc's: there the target's stands.
    expect(accessToken.email).toBe("evil@example.com");
    expect(accessToken[log]).toEqual(expect.arrayContaining(["claim sub is reserved: not set", "checked by the HR system"]));

    // What the target was told, signed with its key.
    const calls = received.filter((r) => r.path === "/claims");
    expect(calls.map((c) => c.body.function).sort()).toEqual(["preaccesstoken", "preuserinfo"]);
    for (const c of calls) {
      expect(signedBy(key, c.raw, c.signature)).toBe(true);
      expect(signedBy(randomBytes(32).toString("base64url"), c.raw, c.signature)).toBe(false);
      expect(c.body).toMatchObject({
        instanceId: t.server.instanceId,
        clientId: app.clientId,
        user: { id: aliceId, organizationId: orgId, username: "actions-alice", email: "actions-alice@example.com" },
        userMetadata: [{ key: "department", value: Buffer.from("R&D").toString("base64") }],
        userGrants: [{ projectId, roles: [{ key: "reader", organizationIds: [orgId] }] }],
      });
      expect(c.raw).not.toContain("passwordHash");
    }
    expect(calls.find((c) => c.body.function === "preuserinfo")?.body.userinfo).toMatchObject({ sub: aliceId, email: "actions-alice@example.com" });
    expect(calls.find((c) => c.body.function === "preaccesstoken")?.body.claims).toMatchObject({ sub: aliceId, client_id: app.clientId });

    const info = await oidc.fetchUserInfo(cfg, tokens.access_token, aliceId);
    expect(info).toMatchObject({ sub: aliceId, email: "actions-alice@example.com", department: "R&D" });
    const introspected = await oidc.tokenIntrospection(cfg, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, sub: aliceId, client_id: app.clientId, department: "R&D" });
  });

  it("stores the metadata a target sets (set_user_metadata) under SetUserMetadata's rules, as svc, with an audit event", async () => {
    answers.set("/metadata", {
      status: 200,
      body: { set_user_metadata: [{ key: "hr_checked", value: Buffer.from("yes").toString("base64") }] },
    });
    answers.set("/metadata-bad", { status: 200, body: { set_user_metadata: [{ key: "bad", value: "not base64!" }] } });
    answers.set("/metadata-empty-key", { status: 200, body: { set_user_metadata: [{ key: "", value: "" }] } });
    const good = await target("metadata-setter", "/metadata");
    const bad = await target("metadata-bad", "/metadata-bad");
    const empty = await target("metadata-empty-key", "/metadata-empty-key");
    await admin(t, "SetExecution", { function: "preuserinfo", targetIds: [targetId, bad.id, empty.id, good.id] });
    try {
      const { tokens } = await codeFlow(t, await config(), login, alice);
      // The token was issued all the same, with the first target's claims.
      expect(decodeJwt(tokens.id_token as string).department).toBe("R&D");
      const stored = await admin(t, "ListUserMetadata", { userId: aliceId });
      const byKey = Object.fromEntries(stored.result.map((m: Json) => [m.key, Buffer.from(m.value, "base64").toString()]));
      expect(byKey).toMatchObject({ department: "R&D", hr_checked: "yes" });
      expect(byKey.bad).toBeUndefined();
      const events = await admin(t, "ListEvents", { aggregateType: "user", aggregateId: aliceId, eventTypes: ["user.metadata.set"] });
      const bySvc = events.result.filter((e: Json) => e.editorUserId === "svc-system");
      expect(bySvc).toHaveLength(1);
      expect(JSON.stringify(bySvc[0])).toContain("action target metadata-setter");
    } finally {
      await admin(t, "SetExecution", { function: "preuserinfo", targetIds: [targetId] });
      await admin(t, "DeleteUserMetadata", { userId: aliceId, keys: ["hr_checked"] }).catch(() => {});
    }
  });

  it("goes on without the target when it fails, or refuses the token (503 temporarily_unavailable) when it must answer", async () => {
    const before = {
      success: await actionCalls("preuserinfo", "success"),
      error: await actionCalls("preuserinfo", "error"),
      timeout: await actionCalls("preuserinfo", "timeout"),
    };
    answers.set("/broken", { status: 500, body: { error: "down" } });
    await admin(t, "UpdateTarget", { id: targetId, endpoint: `${base}/broken` });
    const cfg = await config();
    const { tokens } = await codeFlow(t, cfg, login, alice);
    expect(decodeJwt(tokens.id_token as string).department).toBeUndefined();
    expect(decodeJwt(tokens.id_token as string).email).toBe("actions-alice@example.com");

    await admin(t, "UpdateTarget", { id: targetId, interruptOnError: true });
    await unavailable(codeFlow(t, cfg, login, alice));

    // A target that does not answer within its timeout counts as failed: refused within about the timeout.
    answers.set("/slow", "hang");
    await admin(t, "UpdateTarget", { id: targetId, endpoint: `${base}/slow`, timeout: "1s" });
    const started = Date.now();
    await unavailable(codeFlow(t, cfg, login, alice));
    expect(Date.now() - started).toBeLessThan(20_000);
    // Answering again, the same target's claims are back (the runtime's cache follows the updates).
    await admin(t, "UpdateTarget", { id: targetId, endpoint: `${base}/claims`, interruptOnError: false, timeout: "10s" });
    const again = await codeFlow(t, cfg, login, alice);
    expect(decodeJwt(again.tokens.id_token as string).department).toBe("R&D");
    // The operator sees each call's outcome (and its duration) in the metrics.
    expect(await actionCalls("preuserinfo", "error")).toBeGreaterThanOrEqual(before.error + 1);
    // (The access token's function runs first: the hanging target refused the flow there.)
    expect(await actionCalls("preaccesstoken", "timeout")).toBeGreaterThanOrEqual(before.timeout + 1);
    expect(await actionCalls("preuserinfo", "success")).toBeGreaterThanOrEqual(before.success + 1);
    expect(await (await fetch(`${t.url}/metrics`)).text()).toMatch(/svc_action_call_duration_seconds_count\{function="preaccesstoken"\} [1-9]/);
  }, 60_000);
});

describe("presamlresponse", () => {
  const entityId = "https://actions-sp.example.com/saml";
  const acs = "https://actions-sp.example.com/saml/acs";
  let targetId: string;

  beforeAll(async () => {
    await samlApp(t, projectId, "actions-sp", spMetadata({ entityId, acs: [{ url: acs, isDefault: true }] }));
    answers.set("/attributes", {
      status: 200,
      body: {
        append_attribute: [
          { name: "department", value: ["R&D"] },
          { name: "groups", name_format: "urn:oasis:names:tc:SAML:2.0:attrname-format:uri", value: ["admins", "<devs & ops>"] },
          { name: "Email", value: ["evil@example.com"] },
          { name: "bad-format", name_format: "urn:example:nope", value: ["x"] },
          { name: "no-values", value: [] },
        ],
      },
    });
    targetId = (await target("saml-attributes", "/attributes")).id;
    await admin(t, "SetExecution", { function: "presamlresponse", targetIds: [targetId] });
  });
  afterAll(async () => {
    await admin(t, "SetExecution", { function: "presamlresponse", targetIds: [] });
  });

  it("adds the target's attributes to the signed assertion node-saml accepts, never replacing svc's", async () => {
    received.length = 0;
    const sp = await nodeSamlSp(t, entityId, acs);
    const requestId = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    const a = await createResponse(t, login, requestId, await signIn(t, login, alice));
    const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: a.post.samlResponse });
    expect(profile).toMatchObject({ UserID: aliceId, Email: "actions-alice@example.com", department: "R&D", groups: ["admins", "<devs & ops>"] });
    expect(profile?.["bad-format"]).toBeUndefined();
    expect(profile?.["no-values"]).toBeUndefined();
    const xml = responseXml(a);
    expect(xml).toContain('Name="groups" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri"');
    expect(await xmlsecVerify(xml, await idpCertificate(t))).toBe(true);
    const [c] = received.filter((r) => r.path === "/attributes");
    expect(c?.body).toMatchObject({
      function: "presamlresponse",
      serviceProvider: entityId,
      user: { id: aliceId },
      attributes: expect.arrayContaining(["UserID", "Email"]),
    });
  });

  it("answers the login UI Unavailable (and the SP nothing) when a target that must answer fails", async () => {
    answers.set("/attributes-down", { status: 503, body: {} });
    await admin(t, "UpdateTarget", { id: targetId, endpoint: `${base}/attributes-down`, interruptOnError: true });
    const sp = await nodeSamlSp(t, entityId, acs);
    const requestId = samlRequestOf(await ssoRedirect(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    const session = await signIn(t, login, alice);
    const refused = await call(t, "rest", login.pat, "CreateResponse", {
      samlRequestId: requestId,
      session: { sessionId: session.sessionId, sessionToken: session.sessionToken },
    });
    expect([refused.code, refused.reason]).toEqual(["unavailable", "Errors.Action.Target.Failed"]);
    // Once the target answers again, the same request is answered.
    await admin(t, "UpdateTarget", { id: targetId, endpoint: `${base}/attributes` });
    const a = await createResponse(t, login, requestId, session);
    expect(responseXml(a)).toContain('Name="department"');
  });
});
