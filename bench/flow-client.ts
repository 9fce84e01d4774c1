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
// Requests go through node:http with a keep-alive agent (one socket per loop), not fetch: on the same core as
// the server, fetch's own work per request (about 0.25 ms of CPU, several times node:http's) would be taken from
// what is being measured.
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";

export interface FlowSpec {
  kind: "code" | "sso" | "refresh";
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
  body: string;
}

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
        res.on("end", () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks).toString("utf8") }));
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

async function token(s: FlowSpec, form: Record<string, string>): Promise<Record<string, unknown>> {
  const res = await send(
    "POST",
    `${s.url}/oauth/v2/token`,
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

interface Totals {
  requests: number;
  durationUs: number;
  p50Us: number;
  p99Us: number;
  non2xx: number;
  errors: number;
}

async function run(s: FlowSpec, seconds: number, chains: string[]): Promise<Totals> {
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
          if (s.kind === "refresh") {
            const out = await token(s, { grant_type: "refresh_token", refresh_token: chains[i] as string });
            chains[i] = out.refresh_token as string;
          } else {
            await codeFlow(s, s.kind === "sso" ? s.session : undefined);
          }
          latencies.push(Number(process.hrtime.bigint() - t0) / 1000);
        } catch (err) {
          failed++;
          sample ||= (err as Error).message;
          // A broken refresh chain cannot go on: the loop stops rather than counting the same failure forever.
          if (s.kind === "refresh") return;
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
const cpu0 = process.cpuUsage();
const warm = await run(spec, spec.warmupSeconds, chains);
const measured = await run(spec, spec.seconds, chains);
const cpu = process.cpuUsage(cpu0);
// The warm-up's flows and this client's own CPU time let the bench state the CPU each flow cost (svc, PostgreSQL, client).
process.stdout.write(`${JSON.stringify({ ...measured, warmRequests: warm.requests + warm.non2xx, clientCpuUs: cpu.user + cpu.system })}\n`);
