// The client side of the sign-in scenarios of `npm run bench`, in its own process (pinned to the loader core like
// wrk): `connections` loops each run whole flows, one after the other, for a warm-up and then for the measured
// seconds, and print the totals as one JSON line like bench/wrk.lua does. A flow counts once all its requests
// succeeded; a failed request ends that flow (counted as non-2xx) and the loop starts the next one.
//
//   code:    GET /oauth/v2/authorize → POST /v2/sessions (user + password) → POST /v2/oidc/auth_requests/{id}
//            (CreateCallback) → POST /oauth/v2/token (authorization_code, PKCE, client_secret_basic)
//   sso:     the same on an existing session: authorize → CreateCallback → token, no password
//   refresh: POST /oauth/v2/token (refresh_token), each loop following its own rotating chain
//
// and the same flows against oidc-provider with its login-API shim (bench/peer/oidc-provider.ts), each loop with a
// cookie jar as a browser has:
//   peer-code:    GET /auth → POST /interaction/<uid>/login (login name + password) → GET /auth/<uid> → POST /token
//   peer-sso:     GET /auth on the browser session → POST /token (the loop signs in once before it starts)
//   peer-refresh: POST /token (refresh_token), each loop following its own rotating chain (started by a sign-in)
//
// SAML login on an existing session, the SP's AuthnRequest (HTTP-Redirect binding, unsigned, a new ID each time)
// built here:
//   saml:      GET /saml/v2/SSO?SAMLRequest=… → POST /v2/saml/saml_requests/{id} (CreateResponse with the session)
//   peer-saml: GET /sso?SAMLRequest=… on the samlify IdP (bench/peer/samlify.ts), which answers with the form
//
// Requests go through node:http with a keep-alive agent (one socket per loop), not fetch: on the same core as
// the server, fetch's own work per request (about 0.25 ms of CPU, several times node:http's) would be taken from
// what is being measured.
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import { deflateRawSync } from "node:zlib";

export interface FlowSpec {
  kind: "code" | "sso" | "refresh" | "peer-code" | "peer-sso" | "peer-refresh" | "saml" | "peer-saml";
  url: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  /** A login client's PAT (IAM_LOGIN_CLIENT). */
  loginPat: string;
  loginName: string;
  password: string;
  /** sso: the existing session. */
  session?: { sessionId: string; sessionToken: string };
  /** saml, peer-saml: the SP's entity id and assertion consumer service; the IdP's SSO path. */
  saml?: { entityId: string; acs: string; ssoPath: string };
  /** refresh: one refresh token per loop. */
  refreshTokens?: string[];
  connections: number;
  warmupSeconds: number;
  seconds: number;
}

class FlowError extends Error {}

interface Answer {
  status: number;
  location?: string;
  setCookie?: string[];
  body: string;
}

/** A browser's cookies for one server (names only: paths and expiry do not matter for these flows). */
type Jar = Map<string, string>;

function remember(jar: Jar, res: Answer): void {
  for (const c of res.setCookie ?? []) {
    const [pair = ""] = c.split(";");
    const eq = pair.indexOf("=");
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    if (value === "" || /expires=Thu, 01 Jan 1970/i.test(c)) jar.delete(name);
    else jar.set(name, value);
  }
}

const cookieHeader = (jar: Jar): Record<string, string> => (jar.size ? { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") } : {});

let agent: http.Agent | undefined;

/** One request on a kept-alive connection: its status, Location and body. */
function send(method: string, url: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method, agent, headers: body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            location: res.headers.location,
            setCookie: res.headers["set-cookie"],
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

function expectOk(res: Answer, what: string): Answer {
  if (res.status >= 400) throw new FlowError(`${what}: HTTP ${res.status} ${res.body.slice(0, 200)}`);
  return res;
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

async function authorize(s: FlowSpec, challenge: string): Promise<string> {
  const q = new URLSearchParams({
    client_id: s.clientId,
    redirect_uri: s.redirectUri,
    response_type: "code",
    scope: "openid profile offline_access",
    state: randomBytes(8).toString("hex"),
    code_challenge: challenge,
    code_challenge_method: "S256",
  });
  const res = await send("GET", `${s.url}/oauth/v2/authorize?${q}`, {});
  const location = res.location;
  const id = location ? new URL(location).searchParams.get("authRequest") : null;
  if (res.status !== 302 || !id) throw new FlowError(`authorize: HTTP ${res.status} ${location ?? res.body.slice(0, 200)}`);
  return id;
}

async function json(s: FlowSpec, method: string, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await send(method, `${s.url}${path}`, { authorization: `Bearer ${s.loginPat}`, "content-type": "application/json" }, JSON.stringify(body));
  return JSON.parse(expectOk(res, `${method} ${path}`).body) as Record<string, unknown>;
}

async function token(s: FlowSpec, form: Record<string, string>, path = "/oauth/v2/token"): Promise<Record<string, unknown>> {
  const res = await send(
    "POST",
    `${s.url}${path}`,
    {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(s.clientId)}:${encodeURIComponent(s.clientSecret)}`).toString("base64")}`,
    },
    new URLSearchParams(form).toString(),
  );
  return JSON.parse(expectOk(res, "token").body) as Record<string, unknown>;
}

async function codeFlow(s: FlowSpec, session?: { sessionId: string; sessionToken: string }): Promise<void> {
  const { verifier, challenge } = pkce();
  const authRequestId = await authorize(s, challenge);
  const signedIn =
    session ??
    ((await json(s, "POST", "/v2/sessions", { checks: { user: { loginName: s.loginName }, password: { password: s.password } } })) as {
      sessionId: string;
      sessionToken: string;
    });
  const { callbackUrl } = (await json(s, "POST", `/v2/oidc/auth_requests/${authRequestId}`, {
    session: { sessionId: signedIn.sessionId, sessionToken: signedIn.sessionToken },
  })) as { callbackUrl: string };
  const code = new URL(callbackUrl).searchParams.get("code");
  if (!code) throw new FlowError(`callback without a code: ${callbackUrl}`);
  const out = await token(s, { grant_type: "authorization_code", code, redirect_uri: s.redirectUri, code_verifier: verifier });
  if (typeof out.id_token !== "string") throw new FlowError("no id_token");
}

/** oidc-provider's authorize (or its resume after the login): where it redirects, with the jar's cookies. */
async function peerGet(s: FlowSpec, url: string, jar: Jar): Promise<string> {
  const res = await send("GET", url.startsWith("http") ? url : `${s.url}${url}`, cookieHeader(jar));
  remember(jar, res);
  if (res.status !== 303 && res.status !== 302) throw new FlowError(`peer ${url.slice(0, 40)}: HTTP ${res.status} ${res.body.slice(0, 200)}`);
  return res.location ?? "";
}

/**
 * A code flow on oidc-provider: authorize, the shim's login when there is no session yet (or `consent`, to be given
 * offline_access), the resume, the code exchange. Returns the token response.
 */
async function peerFlow(s: FlowSpec, jar: Jar, consent = false): Promise<Record<string, unknown>> {
  const { verifier, challenge } = pkce();
  const q = new URLSearchParams({
    client_id: s.clientId,
    redirect_uri: s.redirectUri,
    response_type: "code",
    scope: "openid profile offline_access",
    state: randomBytes(8).toString("hex"),
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...(consent ? { prompt: "consent" } : {}),
  });
  let location = await peerGet(s, `/auth?${q}`, jar);
  if (!location.startsWith(s.redirectUri)) {
    const login = await send(
      "POST",
      `${s.url}${location}/login`,
      { "content-type": "application/json", ...cookieHeader(jar) },
      JSON.stringify({ loginName: s.loginName, password: s.password }),
    );
    remember(jar, login);
    if (login.status !== 303) throw new FlowError(`peer login: HTTP ${login.status} ${login.body.slice(0, 200)}`);
    location = await peerGet(s, login.location ?? "", jar);
  }
  const code = new URL(location).searchParams.get("code");
  if (!code) throw new FlowError(`peer callback without a code: ${location.slice(0, 200)}`);
  const out = await token(s, { grant_type: "authorization_code", code, redirect_uri: s.redirectUri, code_verifier: verifier }, "/token");
  if (typeof out.id_token !== "string") throw new FlowError("no id_token");
  return out;
}

/** The SP's AuthnRequest for the HTTP-Redirect binding (deflated, base64, URL-encoded), unsigned. */
function authnRequestQuery(saml: NonNullable<FlowSpec["saml"]>): string {
  const xml = `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_${randomBytes(16).toString("hex")}" Version="2.0" IssueInstant="${new Date().toISOString()}" AssertionConsumerServiceURL="${saml.acs}" ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"><saml:Issuer>${saml.entityId}</saml:Issuer><samlp:NameIDPolicy Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress" AllowCreate="true"/></samlp:AuthnRequest>`;
  return `SAMLRequest=${encodeURIComponent(deflateRawSync(xml).toString("base64"))}&RelayState=bench`;
}

/** A SAML login on an existing session: svc (SSO, then the login UI's CreateResponse) or the samlify peer (SSO). */
async function samlFlow(s: FlowSpec): Promise<void> {
  const saml = s.saml as NonNullable<FlowSpec["saml"]>;
  const res = await send("GET", `${s.url}${saml.ssoPath}?${authnRequestQuery(saml)}`, {});
  if (s.kind === "peer-saml") {
    if (res.status !== 200 || !res.body.includes('name="SAMLResponse"')) throw new FlowError(`peer SSO: HTTP ${res.status} ${res.body.slice(0, 200)}`);
    return;
  }
  const id = res.location ? new URL(res.location, s.url).searchParams.get("samlRequest") : null;
  if (res.status !== 302 || !id) throw new FlowError(`SSO: HTTP ${res.status} ${res.location ?? res.body.slice(0, 200)}`);
  const out = await json(s, "POST", `/v2/saml/saml_requests/${id}`, { session: s.session });
  if (typeof (out.post as { samlResponse?: unknown } | undefined)?.samlResponse !== "string") throw new FlowError("no SAMLResponse");
}

interface Totals {
  requests: number;
  durationUs: number;
  p50Us: number;
  p99Us: number;
  non2xx: number;
  errors: number;
}

/** One flow of the spec's kind, by loop `i` (its refresh chain, its browser's cookies). */
async function oneFlow(s: FlowSpec, i: number, chains: string[], jars: Jar[]): Promise<void> {
  switch (s.kind) {
    case "refresh":
    case "peer-refresh": {
      const out = await token(s, { grant_type: "refresh_token", refresh_token: chains[i] as string }, s.kind === "refresh" ? "/oauth/v2/token" : "/token");
      if (typeof out.refresh_token !== "string") throw new FlowError(`no refresh token: ${JSON.stringify(out).slice(0, 200)}`);
      chains[i] = out.refresh_token;
      return;
    }
    case "peer-code":
      await peerFlow(s, new Map());
      return;
    case "saml":
    case "peer-saml":
      await samlFlow(s);
      return;
    case "peer-sso":
      await peerFlow(s, jars[i] as Jar);
      return;
    default:
      await codeFlow(s, s.kind === "sso" ? s.session : undefined);
  }
}

async function run(s: FlowSpec, seconds: number, chains: string[], jars: Jar[]): Promise<Totals> {
  const latencies: number[] = [];
  let failed = 0;
  let sample = "";
  const start = process.hrtime.bigint();
  const end = start + BigInt(seconds) * 1_000_000_000n;
  await Promise.all(
    Array.from({ length: s.connections }, async (_, i) => {
      while (process.hrtime.bigint() < end) {
        const t0 = process.hrtime.bigint();
        try {
          await oneFlow(s, i, chains, jars);
          latencies.push(Number(process.hrtime.bigint() - t0) / 1000);
        } catch (err) {
          failed++;
          sample ||= (err as Error).message;
          // A broken refresh chain cannot go on: the loop stops rather than counting the same failure forever.
          if (s.kind === "refresh" || s.kind === "peer-refresh") return;
        }
      }
    }),
  );
  const durationUs = Number(process.hrtime.bigint() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  if (sample) process.stderr.write(`  ${s.kind} flow failures: ${failed}, for example ${sample}\n`);
  return { requests: latencies.length, durationUs, p50Us: at(0.5), p99Us: at(0.99), non2xx: failed, errors: 0 };
}

const spec = JSON.parse(process.env.SVC_BENCH_FLOW ?? "") as FlowSpec;
agent = new http.Agent({ keepAlive: true, maxSockets: spec.connections });
const chains = [...(spec.refreshTokens ?? [])];
// On the peer each loop signs in once (with consent to offline_access): its browser session and its refresh chain.
const jars: Jar[] = Array.from({ length: spec.connections }, () => new Map());
if (spec.kind === "peer-sso" || spec.kind === "peer-refresh") {
  for (const [i, jar] of jars.entries()) chains[i] = (await peerFlow(spec, jar, true)).refresh_token as string;
}
const cpu0 = process.cpuUsage();
const warm = await run(spec, spec.warmupSeconds, chains, jars);
const measured = await run(spec, spec.seconds, chains, jars);
const cpu = process.cpuUsage(cpu0);
// The warm-up's flows and this client's own CPU time let the bench state the CPU each flow cost (svc, PostgreSQL, client).
process.stdout.write(`${JSON.stringify({ ...measured, warmRequests: warm.requests + warm.non2xx, clientCpuUs: cpu.user + cpu.system })}\n`);
