// Mutation fuzzing of every public surface. Well-formed requests, made against a live world (an OIDC app, a SAML SP,
// a login client, a user with a password), are mutated by a seeded generator and sent to a real server: no answer
// may be a 5xx or take longer than its timeout, and the server still answers /healthz afterwards. A failure names the
// seed, the case number and the request, to replay it (SVC_FUZZ_SEED; SVC_FUZZ_CASES for a longer run).
import { createHash, randomBytes, sign } from "node:crypto";
import http2 from "node:http2";
import { deflateRawSync } from "node:zlib";
import { create, type DescMessage, ScalarType, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ListUsersRequestSchema } from "../../gen/svc/user/v2/user_service_pb.js";
import { API_SERVICES } from "../../src/api/services.js";
import { freePort } from "../support/apache.js";
import { createHuman, defaultOrgId, type Machine, PASSWORD, project } from "../support/fixtures.js";
import { basicAuth, finish, loginClient, oidcApp, signIn } from "../support/oidc.js";
import { admin } from "../support/rpc.js";
import { REDIRECT, samlApp, signAuthnRequest, spKeyPair, spMetadata } from "../support/saml.js";
import { type SamlifyIdp, startSamlifyIdp } from "../support/saml-idp.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { type SmtpSink, startSmtpSink } from "../support/smtp.js";

const SEED = Number(process.env.SVC_FUZZ_SEED ?? 20261128);
const CASES = Number(process.env.SVC_FUZZ_CASES ?? 150);
const TIMEOUT_MS = 10_000;

/** mulberry32: a small seeded generator, so that a failing case can be replayed. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  return { next, int, pick };
}
type Gen = ReturnType<typeof generator>;

/** Pieces that break parsers: encodings, separators, quotes, markup, surrogates, control characters, numbers. */
const PIECES = [
  "\u0000",
  "\uFFFF",
  "\uD800",
  "\uDC00",
  "😀",
  "é",
  "%",
  "%ZZ",
  "%00",
  "%C3%28",
  "%FF",
  "+",
  "&",
  "=",
  "?",
  "#",
  "/",
  "\\",
  "'",
  '"',
  "`",
  "<",
  ">",
  '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>',
  "&e;",
  "&#xD800;",
  "&#0;",
  "]]>",
  "<![CDATA[",
  "\n",
  "\r\n",
  "\t",
  " ",
  "{",
  "}",
  "[",
  "]",
  ":",
  ",",
  "null",
  "-1",
  "0",
  "1e309",
  "99999999999999999999999",
  "NaN",
  "true",
  "..",
  "%2e%2e%2f",
  "\u202e",
  "Bearer",
  "Basic ====",
] as const;

/** A mutated string: cut, grown, repeated, emptied, replaced, or with a piece inserted. */
function mutateString(g: Gen, s: string): string {
  switch (g.int(9)) {
    case 0:
      return s.slice(0, g.int(s.length + 1));
    case 1:
      return s.slice(g.int(s.length + 1));
    case 2: {
      const at = g.int(s.length + 1);
      return s.slice(0, at) + g.pick(PIECES) + s.slice(at);
    }
    case 3:
      return s + s;
    case 4:
      return "";
    case 5:
      return g.pick(PIECES).repeat(1 + g.int(3000));
    case 6: {
      const at = g.int(s.length + 1);
      return s.slice(0, at) + String.fromCharCode(g.int(0x10000)) + s.slice(at + 1);
    }
    case 7:
      return Buffer.from(s).toString(g.pick(["base64", "hex", "latin1"] as const));
    default:
      return g.pick(PIECES);
  }
}

/** Mutated bytes: flipped, cut, repeated, or with random bytes inserted. */
function mutateBytes(g: Gen, b: Uint8Array): Buffer {
  const out = Buffer.from(b);
  switch (g.int(4)) {
    case 0:
      for (let i = 1 + g.int(4); i > 0; i--) out[g.int(out.length)] = g.int(256);
      return out;
    case 1:
      return out.subarray(0, g.int(out.length));
    case 2: {
      const at = g.int(out.length + 1);
      return Buffer.concat([out.subarray(0, at), Buffer.from(Array.from({ length: 1 + g.int(16) }, () => g.int(256))), out.subarray(at)]);
    }
    default:
      return Buffer.concat([out, out]);
  }
}

/** A JSON value for a protobuf scalar: mostly of its type (real ids among the strings), sometimes of another. */
function scalarJson(g: Gen, type: ScalarType, ids: string[]): JsonValue {
  if (g.int(10) === 0) return g.pick<JsonValue>([null, "", "x", -1, 1.5, true, [], {}]);
  switch (type) {
    case ScalarType.STRING:
      return g.pick<() => JsonValue>([
        () => (ids.length ? g.pick(ids) : "0"),
        () => (ids.length ? g.pick(ids) : "1"),
        () => "",
        () => `fz-${g.int(1e6)}@example.com`,
        () => "https://example.com/x?y=z",
        () => mutateString(g, "value"),
        () => "x".repeat(1 + g.int(300)),
      ])();
    case ScalarType.BOOL:
      return g.int(2) === 0;
    case ScalarType.BYTES:
      return g.int(4) ? Buffer.from(mutateString(g, "bytes")).toString("base64") : mutateString(g, "!!");
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return g.pick<JsonValue>([0, 1.5, -1, 1e308, "NaN", "Infinity"]);
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return g.pick<JsonValue>(["0", "1", "-1", "18446744073709551615", "9223372036854775807", 10, 1000]);
    default:
      return g.pick<JsonValue>([0, 1, -1, 10, 100, 1000, 1001, 2147483647, 4294967295]);
  }
}

/** A JSON message for `desc` (proto3's JSON mapping): some fields set, one oneof member or, rarely, two. */
function messageJson(g: Gen, desc: DescMessage, depth: number, ids: string[]): JsonValue {
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return g.pick<JsonValue>(["2026-11-28T00:00:00Z", "1970-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "not a time", 0]);
    case "google.protobuf.Duration":
      return g.pick<JsonValue>(["3600s", "0s", "-1s", "315576000001s", "1.5s", "forever"]);
    case "google.protobuf.Struct":
    case "google.protobuf.Value":
      return g.int(2) ? { a: 1, b: [true, null, "x"] } : "x";
    case "google.protobuf.Empty":
      return {};
  }
  const out: Record<string, JsonValue> = {};
  if (depth > 4) return out;
  const oneofsSet = new Set<string>();
  for (const f of desc.fields) {
    if (g.int(3) === 0) continue;
    if (f.oneof) {
      if (oneofsSet.has(f.oneof.name) && g.int(20) !== 0) continue;
      oneofsSet.add(f.oneof.name);
    }
    const one = (): JsonValue => {
      if (f.fieldKind === "scalar") return scalarJson(g, f.scalar, ids);
      if (f.fieldKind === "enum") return g.int(8) ? (g.pick(f.enum.values).name as string) : g.pick<JsonValue>(["NOT_A_VALUE", 999, -1]);
      if (f.fieldKind === "message") return messageJson(g, f.message, depth + 1, ids);
      if (f.fieldKind === "list") {
        const item = (): JsonValue =>
          f.listKind === "scalar"
            ? scalarJson(g, f.scalar, ids)
            : f.listKind === "enum"
              ? (g.pick(f.enum.values).name as string)
              : messageJson(g, f.message, depth + 1, ids);
        return Array.from({ length: g.pick([0, 1, 2, 3, 150]) }, item);
      }
      const value = (): JsonValue =>
        f.mapKind === "scalar"
          ? scalarJson(g, f.scalar, ids)
          : f.mapKind === "enum"
            ? (g.pick(f.enum.values).name as string)
            : messageJson(g, f.message, depth + 1, ids);
      return Object.fromEntries(Array.from({ length: g.int(4) }, () => [mutateString(g, "key"), value()]));
    };
    out[f.jsonName] = one();
  }
  if (g.int(15) === 0) out[mutateString(g, "unknownField")] = 1;
  return out;
}

type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

function deep(depth: number, leaf: JsonValue): JsonValue {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

/** A value of another shape than JSON expects here (or the same, mutated). */
function mutateValue(g: Gen, v: JsonValue): JsonValue {
  if (g.int(3) === 0 && v !== null && typeof v === "object") return mutateJson(g, v);
  if (typeof v === "string" && g.int(2) === 0) return mutateString(g, v);
  return g.pick<() => JsonValue>([
    () => null,
    () => true,
    () => 0,
    () => -1,
    () => 1.5,
    () => 1e308,
    () => 2 ** 63,
    () => "",
    () => "x".repeat(5000),
    () => [],
    () => ({}),
    () => [v, v],
    () => ({ value: v }),
    () => deep(40 + g.int(200), v),
    () => Array.from({ length: 2000 }, () => v),
  ])();
}

/** A JSON document with one to three of its members mutated, dropped or joined by unknown ones. */
function mutateJson(g: Gen, doc: JsonValue): JsonValue {
  const copy = JSON.parse(JSON.stringify(doc)) as JsonValue;
  for (let n = 1 + g.int(3); n > 0; n--) {
    // Walk to a random container, then change one of its members.
    let at: JsonValue = copy;
    while (at !== null && typeof at === "object" && g.int(3) !== 0) {
      const keys = Object.keys(at);
      if (!keys.length) break;
      const k = g.pick(keys);
      const child = (at as Record<string, JsonValue>)[k] as JsonValue;
      if (child === null || typeof child !== "object") break;
      at = child;
    }
    if (at === null || typeof at !== "object") continue;
    const record = at as Record<string, JsonValue>;
    const keys = Object.keys(record);
    const op = g.int(4);
    if (op === 0 && keys.length) delete record[g.pick(keys)];
    else if (op === 1) record[mutateString(g, "unknownField")] = mutateValue(g, "x");
    else if (keys.length) {
      const k = g.pick(keys);
      record[k] = mutateValue(g, record[k] as JsonValue);
    }
  }
  return copy;
}

/** Form or query parameters with one to three mutations: values, names, repeats, removals. */
function mutateParams(g: Gen, params: [string, string][]): string {
  const out = params.map(([k, v]) => [k, v] as [string, string]);
  for (let n = 1 + g.int(3); n > 0; n--) {
    const i = g.int(out.length);
    const op = g.int(5);
    if (op === 0 && out.length) out.splice(i, 1);
    else if (op === 1 && out[i]) out.push([out[i][0], mutateString(g, out[i][1])]);
    else if (op === 2 && out[i]) out[i] = [mutateString(g, out[i][0]), out[i][1]];
    else if (out[i]) out[i] = [out[i][0], mutateString(g, out[i][1])];
  }
  // Most cases encode properly; some send the raw text, broken escapes and all.
  if (g.int(4) === 0) return out.map(([k, v]) => `${k}=${v}`).join("&");
  return new URLSearchParams(out).toString();
}

/** Percent-encodes the UTF-8 bytes of `s` (a lone surrogate as U+FFFD), as a client puts any text into a path. */
const enc = (s: string) =>
  [...Buffer.from(s, "utf8")]
    .map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`))
    .join("");

interface Sent {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

let t: TestServer;
let smtp: SmtpSink;
let ext: SamlifyIdp;
const signingSp = spKeyPair("signing-sp.fuzz.example.com");

const w = {
  projectId: "",
  signedEntityId: "https://signing-sp.fuzz.example.com/metadata",
  signedAcs: "https://signing-sp.fuzz.example.com/acs",
  orgId: "",
  clientId: "",
  clientSecret: "",
  loginPat: "",
  userId: "",
  spEntityId: "",
  spAcs: "",
  authRequestId: "",
};

// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters fetch refuses in a header value
const HEADER_UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f]/g;

/**
 * Header values as a raw client would put them on the wire: UTF-8 bytes read as Latin-1 (fetch takes bytes only),
 * without the control characters (but TAB) that fetch refuses to send.
 */
function wire(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) out[k] = Buffer.from(v, "utf8").toString("latin1").replace(HEADER_UNSAFE, "");
  return out;
}

/** Where the redirects sent the client, without their queries, in order (the last one is the last case's). */
const locations: string[] = [];

/** Sends one case; a 5xx, a hang or a dropped connection fails with what to replay. */
async function send(surface: string, n: number, r: Sent): Promise<number> {
  const what = `${surface} case ${n} (SVC_FUZZ_SEED=${SEED}): ${r.method} ${r.path.slice(0, 300)} ${JSON.stringify(r.headers ?? {}).slice(0, 300)} ${(r.body ?? "").slice(0, 500)}`;
  let status: number;
  try {
    const res = await fetch(t.url + r.path, {
      method: r.method,
      headers: r.headers && wire(r.headers),
      // fetch sends no body with GET or HEAD.
      body: r.method === "GET" || r.method === "HEAD" ? undefined : r.body,
      redirect: "manual",
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    await res.arrayBuffer();
    status = res.status;
    const location = res.headers.get("location");
    if (location) locations.push(location.split("?", 1)[0] as string);
  } catch (err) {
    throw new Error(`${what}\n→ no answer: ${String(err)}`);
  }
  if (status >= 500) throw new Error(`${what}\n→ HTTP ${status}`);
  return status;
}

/** CASES mutated requests from `make`, one at a time; the statuses seen, for the test to check it reached code. */
async function fuzz(surface: string, salt: number, make: (g: Gen) => Sent): Promise<Map<number, number>> {
  const g = generator(SEED ^ salt);
  const seen = new Map<number, number>();
  for (let n = 0; n < CASES; n++) {
    const status = await send(surface, n, make(g));
    seen.set(status, (seen.get(status) ?? 0) + 1);
  }
  return seen;
}

const form = { "content-type": "application/x-www-form-urlencoded" };
const json = (pat: string) => ({ authorization: `Bearer ${pat}`, "content-type": "application/json" });

beforeAll(async () => {
  // Without the brute-force limits: past them every case would meet the same 429 instead of the code under test
  // (rate-limits.test.ts covers them).
  // A mail server, so that the forms that send codes and links go all the way.
  smtp = await startSmtpSink();
  // A fixed port and external URL: the external SAML identity provider fetches svc's SP metadata from it.
  const port = await freePort();
  t = await startTestServer({
    SVC_PORT: String(port),
    SVC_EXTERNAL_URL: `http://127.0.0.1:${port}`,
    SVC_RATE_LIMIT_CLIENT_FAILURES: "0",
    SVC_RATE_LIMIT_ADDRESS_FAILURES: "0",
    SVC_SMTP_URL: smtp.url,
    SVC_SMTP_FROM: "svc <no-reply@example.test>",
  });
  w.orgId = await defaultOrgId(t);
  const projectId = await project(t, w.orgId, "fuzzed");
  w.projectId = projectId;
  const app = await oidcApp(t, projectId, "fuzzed-rp", { redirectUris: ["https://rp.example.com/cb"] });
  w.clientId = app.clientId;
  w.clientSecret = app.clientSecret;
  w.loginPat = (await loginClient(t, w.orgId, "fuzz-login")).pat;
  w.userId = await createHuman(t, w.orgId, "fuzz-user");
  w.spEntityId = "https://sp.fuzz.example.com/metadata";
  w.spAcs = "https://sp.fuzz.example.com/acs";
  await samlApp(t, projectId, "fuzzed-sp", spMetadata({ entityId: w.spEntityId, cert: spKeyPair(), acs: [{ url: w.spAcs, index: 0, isDefault: true }] }));
  await samlApp(
    t,
    projectId,
    "fuzzed-signing-sp",
    spMetadata({
      entityId: w.signedEntityId,
      cert: signingSp,
      authnRequestsSigned: true,
      acs: [{ url: w.signedAcs, index: 0, isDefault: true }],
      slo: [{ url: "https://signing-sp.fuzz.example.com/slo", binding: REDIRECT }],
    }),
  );
  const authorize = await fetch(
    `${t.url}/oauth/v2/authorize?${new URLSearchParams({ client_id: w.clientId, redirect_uri: "https://rp.example.com/cb", response_type: "code", scope: "openid" })}`,
    { redirect: "manual" },
  );
  w.authRequestId = new URL(authorize.headers.get("location") as string).searchParams.get("authRequest") as string;
}, 120_000);
afterAll(async () => {
  await ext?.close();
  await t?.stop();
  await smtp?.close();
});

const twoxx = (seen: Map<number, number>) => [...seen.keys()].some((s) => s < 300);
const fourxx = (seen: Map<number, number>) => [...seen.keys()].some((s) => s >= 400 && s < 500);

describe("mutated requests never get a 5xx", () => {
  it("OAuth token endpoint (every grant, client authentication in the header and in the body)", async () => {
    const seen = await fuzz("token", 1, (g) => {
      const grant = g.pick([
        [
          ["grant_type", "authorization_code"],
          ["code", "c0de"],
          ["redirect_uri", "https://rp.example.com/cb"],
          ["code_verifier", "v".repeat(43)],
        ],
        [
          ["grant_type", "refresh_token"],
          ["refresh_token", "rt"],
          ["scope", "openid offline_access"],
        ],
        [
          ["grant_type", "client_credentials"],
          ["scope", "openid urn:svc:iam:org:project:id:svc:aud"],
        ],
        [
          ["grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
          ["assertion", "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln"],
          ["scope", "openid"],
        ],
        [
          ["grant_type", "urn:ietf:params:oauth:grant-type:device_code"],
          ["device_code", "d3vice"],
        ],
        [
          ["grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"],
          ["subject_token", "opaque-token-value"],
          ["subject_token_type", "urn:ietf:params:oauth:token-type:access_token"],
          ["actor_token", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"],
          ["actor_token_type", "urn:ietf:params:oauth:token-type:jwt"],
          ["audience", "svc"],
          ["scope", "openid"],
          ["requested_token_type", "urn:ietf:params:oauth:token-type:jwt"],
        ],
      ] as [string, string][][]);
      const inBody = g.int(2) === 0;
      const params: [string, string][] = inBody ? [...grant, ["client_id", w.clientId], ["client_secret", w.clientSecret]] : grant;
      const auth: Record<string, string> = inBody
        ? {}
        : { authorization: g.int(4) ? basicAuth(w.clientId, w.clientSecret) : mutateString(g, basicAuth(w.clientId, w.clientSecret)) };
      return { method: "POST", path: "/oauth/v2/token", headers: { ...form, ...auth }, body: mutateParams(g, params) };
    });
    expect(fourxx(seen)).toBe(true);
  });

  it("authorization endpoint (every parameter)", async () => {
    const base: [string, string][] = [
      ["client_id", ""],
      ["redirect_uri", "https://rp.example.com/cb"],
      ["response_type", "code"],
      ["scope", "openid profile email offline_access"],
      ["state", "st"],
      ["nonce", "n"],
      ["code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"],
      ["code_challenge_method", "S256"],
      ["prompt", "login consent"],
      ["max_age", "60"],
      ["login_hint", "fuzz-user"],
      ["ui_locales", "de en"],
      ["id_token_hint", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"],
    ];
    const seen = await fuzz("authorize", 2, (g) => {
      base[0] = ["client_id", w.clientId];
      return { method: g.pick(["GET", "POST"]), path: `/oauth/v2/authorize?${mutateParams(g, base)}` };
    });
    expect([...seen.keys()].some((s) => s === 302)).toBe(true);
  });

  it("introspection, revocation, PAR, userinfo, end_session and the external providers' callbacks", async () => {
    const seen = await fuzz("oauth-other", 3, (g) => {
      const token = mutateString(g, "opaque-token-value");
      return g.pick<() => Sent>([
        () => ({
          method: "POST",
          path: "/oauth/v2/introspect",
          headers: { ...form, authorization: basicAuth(w.clientId, w.clientSecret) },
          body: mutateParams(g, [
            ["token", token],
            ["token_type_hint", "access_token"],
          ]),
        }),
        () => ({
          method: "POST",
          path: "/oauth/v2/device_authorization",
          headers: { ...form, authorization: basicAuth(w.clientId, w.clientSecret) },
          body: mutateParams(g, [
            ["client_id", w.clientId],
            ["scope", "openid profile offline_access"],
          ]),
        }),
        () => ({
          method: "POST",
          path: "/oauth/v2/revoke",
          headers: { ...form, authorization: basicAuth(w.clientId, w.clientSecret) },
          body: mutateParams(g, [
            ["token", token],
            ["token_type_hint", "refresh_token"],
          ]),
        }),
        () => ({
          method: "POST",
          path: "/oauth/v2/par",
          headers: { ...form, authorization: basicAuth(w.clientId, w.clientSecret) },
          body: mutateParams(g, [
            ["response_type", "code"],
            ["redirect_uri", "https://rp.example.com/cb"],
            ["scope", "openid"],
            ["state", "st"],
            ["request_uri", "urn:ietf:params:oauth:request_uri:x"],
          ]),
        }),
        () => ({ method: "GET", path: "/oidc/v1/userinfo", headers: { authorization: `${g.pick(["Bearer", "bearer", "Basic", "DPoP", ""])} ${token}` } }),
        () => ({
          method: "GET",
          path: `/idps/callback?${mutateParams(g, [
            ["state", "st4te"],
            ["code", "c0de"],
            ["iss", "https://op.example.com"],
            ["error", "access_denied"],
          ])}`,
        }),
        () => ({
          method: g.pick(["GET", "POST"]),
          path: `/idps/${enc(mutateString(g, "01m8fyhzne8p5c7b1fjjnqryf1"))}/saml/${g.pick(["acs", "metadata"])}`,
          headers: form,
          body: mutateParams(g, [
            ["SAMLResponse", Buffer.from("<samlp:Response/>").toString("base64")],
            ["RelayState", "rs"],
          ]),
        }),
        () => ({
          method: g.pick(["GET", "POST"]),
          path: `/oidc/v1/end_session?${mutateParams(g, [
            ["id_token_hint", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"],
            ["client_id", w.clientId],
            ["post_logout_redirect_uri", "https://rp.example.com/signed-out"],
            ["state", "s"],
          ])}`,
        }),
      ])();
    });
    expect(fourxx(seen)).toBe(true);
  });

  it("SAML SSO endpoint (HTTP-Redirect and HTTP-POST, the XML mutated before and after encoding)", async () => {
    const request = () =>
      `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_${Math.random().toString(16).slice(2)}" Version="2.0" IssueInstant="${new Date().toISOString()}" AssertionConsumerServiceURL="${w.spAcs}"><saml:Issuer>${w.spEntityId}</saml:Issuer><samlp:NameIDPolicy Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress" AllowCreate="true"/></samlp:AuthnRequest>`;
    const seen = await fuzz("saml-sso", 4, (g) => {
      const xml = g.int(3) ? mutateString(g, request()) : request();
      if (g.int(2) === 0) {
        let encoded = deflateRawSync(Buffer.from(xml)).toString("base64");
        if (g.int(4) === 0) encoded = mutateString(g, encoded);
        const params: [string, string][] = [
          ["SAMLRequest", encoded],
          ["RelayState", "rs"],
        ];
        if (g.int(3) === 0) params.push(["SigAlg", "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"], ["Signature", mutateString(g, "c2lnbmF0dXJl")]);
        return { method: "GET", path: `/saml/v2/SSO?${g.int(3) ? new URLSearchParams(params).toString() : mutateParams(g, params)}` };
      }
      let encoded = Buffer.from(xml).toString("base64");
      if (g.int(4) === 0) encoded = mutateString(g, encoded);
      return {
        method: "POST",
        path: "/saml/v2/SSO",
        headers: form,
        body: mutateParams(g, [
          ["SAMLRequest", encoded],
          ["RelayState", "rs"],
        ]),
      };
    });
    // Unmutated requests go through to the login UI; the rest are refused with a page.
    expect([...seen.keys()].some((s) => s === 302)).toBe(true);
    expect(fourxx(seen)).toBe(true);
  });

  it("SAML SSO endpoint with signed requests (enveloped and query signatures), mutated after signing", async () => {
    const request = () =>
      `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_${Math.random().toString(16).slice(2)}" Version="2.0" IssueInstant="${new Date().toISOString()}" AssertionConsumerServiceURL="${w.signedAcs}"><saml:Issuer>${w.signedEntityId}</saml:Issuer><samlp:NameIDPolicy AllowCreate="true"/></samlp:AuthnRequest>`;
    const seen = await fuzz("saml-signed", 8, (g) => {
      if (g.int(2) === 0) {
        const signed = signAuthnRequest(request(), signingSp);
        const xml = g.int(4) ? mutateString(g, signed) : signed;
        return {
          method: "POST",
          path: "/saml/v2/SSO",
          headers: form,
          body: new URLSearchParams({ SAMLRequest: Buffer.from(xml).toString("base64"), RelayState: "rs" }).toString(),
        };
      }
      const octets = `SAMLRequest=${enc(deflateRawSync(Buffer.from(request())).toString("base64"))}&RelayState=rs&SigAlg=${enc("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256")}`;
      const query = `${octets}&Signature=${enc(sign("sha256", Buffer.from(octets), signingSp.privateKeyPem).toString("base64"))}`;
      return { method: "GET", path: `/saml/v2/SSO?${g.int(4) ? mutateString(g, query) : query}` };
    });
    expect([...seen.keys()].some((s) => s === 302)).toBe(true);
    expect(fourxx(seen)).toBe(true);
  });

  it("SAML SLO endpoint: signed LogoutRequests and LogoutResponses (both bindings), mutated after signing", async () => {
    const message = (kind: "LogoutRequest" | "LogoutResponse") =>
      `<samlp:${kind} xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_${Math.random().toString(16).slice(2)}" Version="2.0" IssueInstant="${new Date().toISOString()}"${kind === "LogoutResponse" ? ' InResponseTo="_sent"' : ""}><saml:Issuer>${w.signedEntityId}</saml:Issuer>${kind === "LogoutRequest" ? '<saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">fuzz-user@example.com</saml:NameID><samlp:SessionIndex>s1</samlp:SessionIndex>' : '<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>'}</samlp:${kind}>`;
    const seen = await fuzz("saml-slo", 8, (g) => {
      const kind = g.int(3) === 0 ? "LogoutResponse" : "LogoutRequest";
      const param = kind === "LogoutRequest" ? "SAMLRequest" : "SAMLResponse";
      if (g.int(2) === 0) {
        const signed = signAuthnRequest(message(kind), signingSp);
        const xml = g.int(4) ? mutateString(g, signed) : signed;
        return {
          method: "POST",
          path: "/saml/v2/SLO",
          headers: form,
          body: new URLSearchParams({ [param]: Buffer.from(xml).toString("base64"), RelayState: "rs" }).toString(),
        };
      }
      const octets = `${param}=${enc(deflateRawSync(Buffer.from(message(kind))).toString("base64"))}&RelayState=rs&SigAlg=${enc("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256")}`;
      const query = `${octets}&Signature=${enc(sign("sha256", Buffer.from(octets), signingSp.privateKeyPem).toString("base64"))}`;
      return { method: "GET", path: `/saml/v2/SLO?${g.int(4) ? mutateString(g, query) : g.int(2) ? query : `logout=${enc(mutateString(g, "0123456789"))}`}` };
    });
    // Unmutated LogoutRequests name a subject the SP was never given: UnknownPrincipal, answered at its SLO endpoint.
    expect([...seen.keys()].some((s) => s === 302)).toBe(true);
    expect(fourxx(seen)).toBe(true);
  });

  it("SCIM: creates, filters, patches and bulk requests", async () => {
    const scim = { authorization: `Bearer ${t.pat}`, "content-type": "application/scim+json" };
    const base = `/scim/v2/${w.orgId}`;
    let i = 0;
    const user = () => ({
      schemas: ["urn:ietf:params:scim:schemas:core:2.0:User"],
      userName: `fz-${i++}@example.com`,
      name: { givenName: "F", familyName: "Z", formatted: "F Z" },
      emails: [{ value: `fz-${i}@example.com`, primary: true, type: "work" }],
      phoneNumbers: [{ value: "+41 79 000 00 00", type: "mobile" }],
      active: true,
      externalId: `ext-${i}`,
      password: "Fuzz-Passw0rd!",
    });
    const first = await fetch(`${t.url}${base}/Users`, { method: "POST", headers: scim, body: JSON.stringify(user()) });
    expect(first.status).toBe(201);
    const created = (await first.json()) as { id: string };
    const seen = await fuzz("scim", 5, (g) =>
      g.pick<() => Sent>([
        () => ({ method: "POST", path: `${base}/Users`, headers: scim, body: JSON.stringify(mutateJson(g, user())) }),
        () => ({
          method: "GET",
          path: `${base}/Users?${mutateParams(g, [
            [
              "filter",
              g.pick([
                'userName eq "fz-1@example.com"',
                'emails[type eq "work" and value co "@"]',
                'name.familyName sw "Z" or active eq true',
                "not (userName pr)",
              ]),
            ],
            ["startIndex", "1"],
            ["count", "10"],
            ["sortBy", "userName"],
            ["sortOrder", "descending"],
          ])}`,
          headers: scim,
        }),
        () => ({
          method: "PATCH",
          path: `${base}/Users/${created.id}`,
          headers: scim,
          body: JSON.stringify(
            mutateJson(g, {
              schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
              Operations: [
                { op: "replace", path: 'emails[type eq "work"].value', value: "p@example.com" },
                { op: "add", value: { "name.givenName": "G", active: false } },
                { op: "remove", path: "phoneNumbers" },
              ],
            }),
          ),
        }),
        () => ({
          method: "POST",
          path: `${base}/Bulk`,
          headers: scim,
          body: JSON.stringify(
            mutateJson(g, {
              schemas: ["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],
              failOnErrors: 1,
              Operations: [
                { method: "POST", path: "/Users", bulkId: "a", data: user() },
                {
                  method: "PATCH",
                  path: "/Users/bulkId:a",
                  data: { schemas: ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], Operations: [{ op: "replace", path: "active", value: false }] },
                },
                { method: "DELETE", path: `/Users/${created.id}x` },
              ],
            }),
          ),
        }),
        () => ({
          method: g.pick(["GET", "PUT", "DELETE"]),
          path: `${base}/Users/${enc(mutateString(g, created.id))}`,
          headers: scim,
          body: undefined,
        }),
        // A replace of the real user: its whole representation, mutated.
        () => ({ method: "PUT", path: `${base}/Users/${created.id}`, headers: scim, body: JSON.stringify(mutateJson(g, { ...user(), id: created.id })) }),
      ])(),
    );
    expect(twoxx(seen) && fourxx(seen)).toBe(true);
  });

  it("v2 API over Connect JSON and REST (lists with queries, users, sessions, auth requests)", async () => {
    const seen = await fuzz("v2", 6, (g) =>
      g.pick<() => Sent>([
        () => ({
          method: "POST",
          path: "/svc.user.v2.UserService/ListUsers",
          headers: json(t.pat),
          body: JSON.stringify(
            mutateJson(g, {
              query: { offset: "0", limit: 10, asc: true },
              sortingColumn: "USER_FIELD_NAME_USER_NAME",
              queries: [
                { userNameQuery: { userName: "fuzz", method: "TEXT_QUERY_METHOD_CONTAINS_IGNORE_CASE" } },
                { orQuery: { queries: [{ typeQuery: { type: "TYPE_HUMAN" } }, { stateQuery: { state: "USER_STATE_ACTIVE" } }] } },
              ],
            }),
          ),
        }),
        () => ({
          method: "POST",
          path: "/v2/users/new",
          headers: json(t.pat),
          body: JSON.stringify(
            mutateJson(g, {
              organizationId: w.orgId,
              username: `v2-${g.int(1e9)}`,
              human: { profile: { givenName: "A", familyName: "B" }, email: { email: `v2-${g.int(1e9)}@example.com` }, password: { password: PASSWORD } },
            }),
          ),
        }),
        () => ({
          method: "POST",
          path: "/svc.session.v2.SessionService/CreateSession",
          headers: json(w.loginPat),
          body: JSON.stringify(
            mutateJson(g, {
              checks: { user: { loginName: "fuzz-user" }, password: { password: "wrong-Passw0rd!" } },
              lifetime: "3600s",
              metadata: { k: "dg==" },
            }),
          ),
        }),
        () => ({
          method: "POST",
          path: `/v2/oidc/auth_requests/${enc(g.int(2) ? w.authRequestId : mutateString(g, w.authRequestId))}`,
          headers: json(w.loginPat),
          body: JSON.stringify(mutateJson(g, { session: { sessionId: "s", sessionToken: "t" } })),
        }),
        () => ({ method: "GET", path: `/v2/users/${enc(mutateString(g, w.userId))}`, headers: json(t.pat) }),
        () => ({
          method: "POST",
          path: "/svc.user.v2.UserService/GetUserByID",
          headers: { ...json(t.pat), "content-type": g.pick(["application/json", "application/proto", "text/plain", "application/json; charset=latin1"]) },
          body: mutateString(g, JSON.stringify({ userId: w.userId })),
        }),
      ])(),
    );
    expect(twoxx(seen) && fourxx(seen)).toBe(true);
  });

  it("binary protobuf over gRPC (h2c), gRPC-Web and Connect, the message and its framing mutated", async () => {
    const valid = toBinary(
      ListUsersRequestSchema,
      create(ListUsersRequestSchema, {
        query: { offset: 0n, limit: 10, asc: true },
        queries: [{ query: { case: "userNameQuery", value: { userName: "fuzz", method: 1 } } }],
      }),
    );
    const path = "/svc.user.v2.UserService/ListUsers";
    const session = http2.connect(t.url);
    try {
      const g = generator(SEED ^ 9);
      const statuses = new Map<string, number>();
      for (let n = 0; n < CASES; n++) {
        const message = g.int(5) ? mutateBytes(g, valid) : valid;
        // The 5-byte envelope: flags (0, or a compressed or trailer flag nobody negotiated) and a length that may lie.
        const envelope = Buffer.alloc(5);
        envelope[0] = g.int(4) ? 0 : g.pick([1, 0x80, 0xff]);
        envelope.writeUInt32BE(g.int(6) ? message.length : g.pick([0, message.length + 1, message.length - 1, 0xffffffff]) >>> 0, 1);
        const framed = Buffer.concat([envelope, message]);
        const via = g.pick(["grpc", "grpc-web", "connect"] as const);
        const what = `grpc case ${n} via ${via} (SVC_FUZZ_SEED=${SEED}): ${framed.toString("hex").slice(0, 400)}`;
        let status: string;
        if (via === "grpc") {
          status = await new Promise<string>((resolve, reject) => {
            const req = session.request({
              ":method": "POST",
              ":path": path,
              "content-type": "application/grpc",
              te: "trailers",
              authorization: `Bearer ${t.pat}`,
            });
            let code = "";
            req.setTimeout(TIMEOUT_MS, () => reject(new Error(`${what}\n→ no answer in time`)));
            req.on("response", (h) => {
              code = String(h["grpc-status"] ?? h[":status"]);
            });
            req.on("trailers", (h) => {
              code = String(h["grpc-status"] ?? code);
            });
            req.on("data", () => {});
            req.on("end", () => resolve(code));
            req.on("error", (err) => reject(new Error(`${what}\n→ ${String(err)}`)));
            req.end(framed);
          });
        } else {
          const res = await fetch(t.url + path, {
            method: "POST",
            headers: { authorization: `Bearer ${t.pat}`, "content-type": via === "grpc-web" ? "application/grpc-web+proto" : "application/proto" },
            body: via === "grpc-web" ? framed : message,
            signal: AbortSignal.timeout(TIMEOUT_MS),
          });
          const body = Buffer.from(await res.arrayBuffer());
          if (res.status >= 500) throw new Error(`${what}\n→ HTTP ${res.status}`);
          status =
            via === "grpc-web"
              ? (/grpc-status:\s*(\d+)/.exec(body.toString("latin1"))?.[1] ?? res.headers.get("grpc-status") ?? String(res.status))
              : String(res.status);
        }
        // gRPC's Unknown (2) and Internal (13) are its 500s. The one exception is the protocol's own: a message flagged
        // compressed (or with another flag set) when no encoding was negotiated is Internal, as in grpc-go and connect.
        const flagged = envelope[0] !== 0;
        if (via !== "connect" && (status === "2" || (status === "13" && !flagged))) throw new Error(`${what}\n→ grpc-status ${status}`);
        statuses.set(`${via}:${status}`, (statuses.get(`${via}:${status}`) ?? 0) + 1);
      }
      // Unmutated messages are answered (gRPC 0, Connect 200); mutated ones get InvalidArgument (gRPC 3, Connect 400).
      expect([...statuses.keys()]).toEqual(expect.arrayContaining(["grpc:0", "grpc:3", "connect:200", "connect:400"]));
    } finally {
      session.close();
    }
  });

  it("hosted login pages (auth request ids, forms without or with a wrong CSRF token)", async () => {
    const seen = await fuzz("login", 7, (g) =>
      g.pick<() => Sent>([
        () => ({ method: "GET", path: `/ui/login/login?${mutateParams(g, [["authRequest", w.authRequestId]])}` }),
        () => ({
          method: "POST",
          path: "/ui/login/login",
          headers: form,
          body: mutateParams(g, [
            ["authRequest", w.authRequestId],
            ["loginName", "fuzz-user"],
            ["_csrf", "x"],
          ]),
        }),
        () => ({
          method: "POST",
          path: "/ui/login/password",
          headers: form,
          body: mutateParams(g, [
            ["authRequest", w.authRequestId],
            ["password", PASSWORD],
            ["_csrf", "x"],
          ]),
        }),
        () => ({ method: "GET", path: `/ui/login/${enc(mutateString(g, "register"))}?authRequest=${enc(w.authRequestId)}` }),
      ])(),
    );
    expect(fourxx(seen) || twoxx(seen)).toBe(true);
  });

  it("hosted login forms with the browser's cookie and a valid CSRF token, their fields mutated", async () => {
    const g = generator(SEED ^ 10);
    const seen = new Map<number, number>();
    for (let n = 0; n < CASES; n++) {
      // A browser's first visit: the cookie and the CSRF token of its page.
      const page = await fetch(`${t.url}/ui/login/login?authRequest=${w.authRequestId}`, { redirect: "manual" });
      const cookie = (page.headers.getSetCookie().find((c) => c.startsWith("svc-login=")) ?? "").split(";", 1)[0] as string;
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
      expect(cookie && csrf).toBeTruthy();
      const post = (path: string, fields: [string, string][]): Sent => ({
        method: "POST",
        path,
        headers: { ...form, cookie },
        body: mutateParams(g, [["_csrf", csrf], ["authRequest", w.authRequestId], ...fields]),
      });
      const r = g.pick<() => Sent>([
        () => post("/ui/login/login", [["loginName", "fuzz-user"]]),
        () => post("/ui/login/password", [["password", "Wrong-Passw0rd!"]]),
        () =>
          post("/ui/login/register", [
            ["givenName", "R"],
            ["familyName", "Z"],
            ["email", `r${n}@example.com`],
            ["username", `reg-${n}`],
            ["password", PASSWORD],
            ["passwordConfirm", PASSWORD],
          ]),
        () => post("/ui/login/password/reset", [["loginName", "fuzz-user"]]),
        () => post("/ui/login/mfa/totp", [["code", "123456"]]),
        () => post("/ui/login/mfa/email", [["code", "123456"]]),
        () =>
          post("/ui/login/verify-email", [
            ["code", "ABCDEF"],
            ["userId", w.userId],
          ]),
        () =>
          post("/ui/login/accounts", [
            ["sessionId", "s"],
            ["action", "select"],
          ]),
        () => post("/ui/login/idp/start", [["idpId", "nope"]]),
        () => post("/ui/login/device", [["user_code", "BCDF-GHJK"]]),
        () =>
          post("/ui/login/password/change", [
            ["currentPassword", PASSWORD],
            ["newPassword", "N3w-Passw0rd!"],
            ["confirmPassword", "N3w-Passw0rd!"],
          ]),
      ])();
      const status = await send("login-forms", n, r);
      seen.set(status, (seen.get(status) ?? 0) + 1);
    }
    expect(twoxx(seen) || [...seen.keys()].some((s) => s === 302 || s === 303)).toBe(true);
  });

  it("token endpoint with real authorization codes and refresh tokens, the redemption mutated", async () => {
    await createHuman(t, w.orgId, "fuzz-grants");
    const session = await signIn(t, { pat: w.loginPat } as Machine, "fuzz-grants");
    const g = generator(SEED ^ 13);
    const seen = new Map<number, number>();
    const redirectUri = "https://rp.example.com/cb";
    for (let n = 0; n < CASES; n++) {
      const verifier = randomBytes(32).toString("base64url");
      const challenge = createHash("sha256").update(verifier).digest("base64url");
      const authorize = await fetch(
        `${t.url}/oauth/v2/authorize?${new URLSearchParams({ client_id: w.clientId, redirect_uri: redirectUri, response_type: "code", scope: "openid offline_access", code_challenge: challenge, code_challenge_method: "S256" })}`,
        { redirect: "manual" },
      );
      const authRequestId = new URL(authorize.headers.get("location") as string).searchParams.get("authRequest") as string;
      const callback = await finish(t, { pat: w.loginPat } as Machine, authRequestId, session);
      const code = new URL(callback).searchParams.get("code") as string;
      const params: [string, string][] = [
        ["grant_type", "authorization_code"],
        ["code", code],
        ["redirect_uri", redirectUri],
        ["code_verifier", verifier],
      ];
      const auth = { authorization: basicAuth(w.clientId, w.clientSecret) };
      if (g.int(4) !== 0) {
        const status = await send("grants", n, { method: "POST", path: "/oauth/v2/token", headers: { ...form, ...auth }, body: mutateParams(g, params) });
        seen.set(status, (seen.get(status) ?? 0) + 1);
        continue;
      }
      // Untouched, the code gives tokens; their refresh token is then redeemed with mutated parameters (a mutation may
      // leave it whole: then it rotates).
      const redeemed = await fetch(`${t.url}/oauth/v2/token`, { method: "POST", headers: { ...form, ...auth }, body: new URLSearchParams(params).toString() });
      expect(redeemed.status).toBe(200);
      seen.set(200, (seen.get(200) ?? 0) + 1);
      const tokens = (await redeemed.json()) as { refresh_token: string };
      const refresh: [string, string][] = [
        ["grant_type", "refresh_token"],
        ["refresh_token", tokens.refresh_token],
        ["scope", "openid offline_access"],
      ];
      const again = await send("grants-refresh", n, { method: "POST", path: "/oauth/v2/token", headers: { ...form, ...auth }, body: mutateParams(g, refresh) });
      seen.set(again, (seen.get(again) ?? 0) + 1);
    }
    expect(twoxx(seen) && fourxx(seen)).toBe(true);
  });

  it("svc's SAML ACS (brokering): an external identity provider's signed Responses, mutated after signing", async () => {
    ext = await startSamlifyIdp();
    const { id: idpId } = await admin(t, "AddSAMLProvider", {
      name: "Fuzzed IdP",
      metadataXml: Buffer.from(ext.metadata).toString("base64"),
      options: { isLinkingAllowed: true, isCreationAllowed: true, isAutoCreation: true },
    });
    const urls = { successUrl: "https://login.example.com/ok", failureUrl: "https://login.example.com/failed" };
    const g = generator(SEED ^ 12);
    const landed = new Map<string, number>();
    for (let n = 0; n < CASES; n++) {
      const intent = (await (
        await fetch(`${t.url}/svc.user.v2.UserService/StartIdentityProviderIntent`, {
          method: "POST",
          headers: json(w.loginPat),
          body: JSON.stringify({ idpId, urls }),
        })
      ).json()) as { authUrl: string };
      const parsed = await ext.parseRequest({ url: intent.authUrl });
      const who = { nameId: `ext-${n}@idp.example.test`, email: `ext-${n}@idp.example.test`, firstName: "Ext", surName: `N${n}`, userName: `ext-${n}` };
      const signed = Buffer.from(await ext.response(parsed, who, {}, { sign: g.pick(["assertion", "response", "both"] as const) }), "base64").toString();
      const xml = g.int(5) ? mutateString(g, signed) : signed;
      const encoded = g.int(8) ? Buffer.from(xml).toString("base64") : mutateString(g, Buffer.from(xml).toString("base64"));
      const acs = parsed.sp.entityMeta.getAssertionConsumerService("post") as string;
      const status = await send("saml-acs", n, {
        method: "POST",
        path: acs.slice(t.url.length),
        headers: form,
        body: g.int(6)
          ? new URLSearchParams({ SAMLResponse: encoded, RelayState: parsed.relayState }).toString()
          : mutateParams(g, [
              ["SAMLResponse", encoded],
              ["RelayState", parsed.relayState],
            ]),
      });
      const where = status === 303 ? (locations.at(-1) ?? "") : String(status);
      landed.set(where, (landed.get(where) ?? 0) + 1);
    }
    // Untouched Responses sign the user in; the rest are refused to the failure URL, never with a 5xx.
    expect([...landed.keys()]).toEqual(expect.arrayContaining(["https://login.example.com/ok", "https://login.example.com/failed"]));
  });

  // Last but one: its calls may change instance-wide settings (login, lockout, password rules) the others rely on.
  it("every unary RPC of the v2 API, with messages made from its request schema (Connect JSON), ids real or not", async () => {
    const methods = API_SERVICES.flatMap((svc) => svc.methods.filter((m) => m.methodKind === "unary").map((m) => ({ svc, m })));
    const g = generator(SEED ^ 11);
    const seen = new Map<number, number>();
    const reached = new Set<string>();
    for (let n = 0; n < CASES * 4; n++) {
      const { svc, m } = g.pick(methods);
      // Real ids make the calls reach their checks; destructive calls get made-up ones, so the world stays for the rest.
      const destructive = /^(Delete|Remove|Deactivate|Lock|Revoke|Expire|Unlink|Reset|Set|Update|Rotate|Change)/.test(m.name);
      const body = messageJson(g, m.input, 0, destructive ? [] : [w.orgId, w.userId, w.projectId, w.clientId]);
      const token = g.pick([t.pat, t.pat, t.pat, w.loginPat, ""]);
      const status = await send("rpc", n, {
        method: "POST",
        path: `/${svc.typeName}/${m.name}`,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      seen.set(status, (seen.get(status) ?? 0) + 1);
      if (status === 200) reached.add(m.name);
    }
    expect(fourxx(seen)).toBe(true);
    expect(reached.size).toBeGreaterThan(5);
  });

  it("still answers afterwards, and wrote no half of a refused user", async () => {
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    // Every user has its organization and at least one login-relevant row: nothing was left half-written.
    const orphans = await t.server.db.prisma.$queryRawUnsafe<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM "User" u LEFT JOIN "Organization" o ON o."id" = u."orgId" WHERE o."id" IS NULL`,
    );
    expect(orphans[0]?.n).toBe(0);
    await admin(t, "GetUserByID", { userId: w.userId });
  });
});
