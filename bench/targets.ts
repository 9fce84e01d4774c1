// `npm run bench -- --targets`: the targets of issue 28, side by side in one run, each printed as a ratio or a CPU
// figure. CPU per flow is counted per process (svc: this process; a peer: its process, from /proc; PostgreSQL: the
// backends of the bench database, from /proc), so that it hardly moves with other work on the machine, where flows
// per second do. Before the load, one flow of each kind is sent step by step to count svc's statements, writes and
// commits per step (bench/statements.ts).
//
// Compared: svc's sign-in flows (bench/flow-client.ts) with oidc-provider's through its login-API shim (in memory,
// and with its PostgreSQL adapter for the throughput targets), svc's SAML login on an existing session with samlify's
// (bench/peer/samlify.ts), svc's code flow with a password check with one argon2id verification of svc's parameters
// in this process, and the machine-facing ratios: introspection and client credentials against oidc-provider
// (bench/peer.ts), v2 ListUsers pages of 10 (as the instance administrator and as an organization's user manager)
// against a SCIM filtered page of 10.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { deflateRawSync } from "node:zlib";
import type { FlowSpec } from "./flow-client.js";
import { type Measured, type PeerDeps, runPeerComparison, startPeer, stopPeer } from "./peer.js";
import type { BenchContext, FlowResult, LoadResult, Scenario, ScenarioResult } from "./run.js";
import { argon2Bound, type Base, PASSWORD, refreshTokens, SP_ACS, SP_ENTITY, SP_METADATA, samlApp, session, signInWorld } from "./scenarios/sign-in.js";
import { logStatements, statementCounts } from "./statements.js";

export interface TargetDeps {
  runFlow(spec: FlowSpec, serverCpuMs?: () => number): Promise<FlowResult>;
  runScenario(scenario: Scenario): Promise<ScenarioResult>;
  peer: PeerDeps;
  log(msg: string): void;
}

export interface TargetOptions {
  seconds: number;
  connections: number;
  warmupSeconds: number;
  databaseUrl?: string;
  poolSize: number;
  ttlSeconds: number;
}

async function api<T>(url: string, token: string, method: string, p: string, body?: unknown): Promise<T> {
  const res = await fetch(url + p, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: HTTP ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

/** A machine user of the organization with ORG_USER_MANAGER there, and its PAT. */
async function userManagerPat(ctx: BenchContext): Promise<string> {
  const { id } = await api<{ id: string }>(ctx.url, ctx.pat, "POST", "/v2/users/new", {
    organizationId: ctx.orgId,
    username: "bench-user-manager",
    machine: { name: "Bench user manager" },
  });
  await api(ctx.url, ctx.pat, "POST", `/v2/organizations/${ctx.orgId}/members`, { userId: id, roles: ["ORG_USER_MANAGER"] });
  return (await api<{ token: string }>(ctx.url, ctx.pat, "POST", `/v2/users/${id}/pats`, {})).token;
}

/** A child's CPU time in ms from /proc (utime + stime, 100 ticks a second). */
function childCpuMs(child: ChildProcess): () => number {
  return () => {
    const stat = readFileSync(`/proc/${child.pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
}

const SAMLIFY_SCRIPT = fileURLToPath(new URL("./peer/samlify.ts", import.meta.url));

async function startSamlify(): Promise<{ url: string; ssoPath: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ["--import", "tsx", SAMLIFY_SCRIPT], {
    env: { ...process.env, SVC_PEER_SAML: JSON.stringify({ spMetadata: SP_METADATA }) },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const out = await new Promise<{ url: string; ssoPath: string }>((resolve, reject) => {
    let buf = "";
    child.stdout?.on("data", (c: Buffer) => {
      buf += c.toString("utf8");
      const line = buf.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line) as { url: string; ssoPath: string });
    });
    child.on("exit", (code) => reject(new Error(`the samlify peer exited (${code}) before it served`)));
  });
  return { ...out, child };
}

/** svc's statements, writes and commits of each step of one flow, sent one at a time (averaged over `n` flows). */
let logSql = false;

async function stepCounts(base: Base, n: number): Promise<StepRow[]> {
  const steps = new Map<string, { statements: number; writes: number; commits: number }>();
  const counted = async <T>(flow: string, step: string, run: () => Promise<T>): Promise<T> => {
    if (logSql) process.stderr.write(`  ${flow}: ${step}\n`);
    logStatements(logSql);
    const before = statementCounts();
    const out = await run();
    const after = statementCounts();
    logStatements(false);
    const key = `${flow}\t${step}`;
    const row = steps.get(key) ?? { statements: 0, writes: 0, commits: 0 };
    row.statements += after.statements - before.statements;
    row.writes += after.writes - before.writes;
    row.commits += after.commits - before.commits;
    steps.set(key, row);
    return out;
  };
  const login = { url: base.url, pat: base.loginPat } as BenchContext;
  const sso = await session(base);
  for (let i = 0; i < n; i++) {
    // The last flow of each kind, in steady state, shows its statements (SVC_BENCH_SQL_LOG=1).
    logSql = i === n - 1;
    for (const flow of ["code flow with a password check", "SSO code flow"]) {
      const verifier = randomBytes(32).toString("base64url");
      const q = new URLSearchParams({
        client_id: base.clientId,
        redirect_uri: base.redirectUri,
        response_type: "code",
        scope: "openid profile offline_access",
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
      });
      const auth = await counted(flow, "authorize", () => fetch(`${base.url}/oauth/v2/authorize?${q}`, { redirect: "manual" }));
      const authRequestId = new URL(auth.headers.get("location") ?? "").searchParams.get("authRequest");
      const s =
        flow === "SSO code flow"
          ? sso
          : await counted(flow, "CreateSession (user + password)", () =>
              api<{ sessionId: string; sessionToken: string }>(login.url, login.pat, "POST", "/v2/sessions", {
                checks: { user: { loginName: base.loginName }, password: { password: PASSWORD } },
              }),
            );
      const { callbackUrl } = await counted(flow, "CreateCallback", () =>
        api<{ callbackUrl: string }>(login.url, login.pat, "POST", `/v2/oidc/auth_requests/${authRequestId}`, {
          session: { sessionId: s.sessionId, sessionToken: s.sessionToken },
        }),
      );
      const out = await counted(flow, "code exchange", () =>
        tokenRequest(base, {
          grant_type: "authorization_code",
          code: new URL(callbackUrl).searchParams.get("code") ?? "",
          redirect_uri: base.redirectUri,
          code_verifier: verifier,
        }),
      );
      if (flow === "SSO code flow")
        await counted("refresh grant", "token (refresh_token)", () => tokenRequest(base, { grant_type: "refresh_token", refresh_token: out.refresh_token }));
    }
    const relay = `SAMLRequest=${encodeURIComponent(samlRequest())}&RelayState=bench`;
    const sent = await counted("SAML login on a session", "SSO (AuthnRequest)", () => fetch(`${base.url}/saml/v2/SSO?${relay}`, { redirect: "manual" }));
    const id = new URL(sent.headers.get("location") ?? "", base.url).searchParams.get("samlRequest");
    await counted("SAML login on a session", "CreateResponse", () => api(login.url, login.pat, "POST", `/v2/saml/saml_requests/${id}`, { session: sso }));
  }
  return [...steps].map(([key, r]) => {
    const [flow, step] = key.split("\t") as [string, string];
    return { flow, step, statements: r.statements / n, writes: r.writes / n, commits: r.commits / n };
  });
}

function samlRequest(): string {
  const xml = `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_${randomBytes(16).toString("hex")}" Version="2.0" IssueInstant="${new Date().toISOString()}" AssertionConsumerServiceURL="${SP_ACS}" ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"><saml:Issuer>${SP_ENTITY}</saml:Issuer></samlp:AuthnRequest>`;
  return deflateRawSync(xml).toString("base64");
}

async function tokenRequest(base: Base, form: Record<string, string>): Promise<Record<string, string>> {
  const res = await fetch(`${base.url}/oauth/v2/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(base.clientId)}:${encodeURIComponent(base.clientSecret)}`).toString("base64")}`,
    },
    body: new URLSearchParams(form),
  });
  const out = (await res.json()) as Record<string, string>;
  if (!res.ok) throw new Error(`token: HTTP ${res.status} ${JSON.stringify(out)}`);
  return out;
}

export interface StepRow {
  flow: string;
  step: string;
  statements: number;
  writes: number;
  commits: number;
}

/** One flow run's figures as the report shows them. */
export interface FlowFigures {
  label: string;
  flowsPerSecond: number;
  serverCpuMs: number;
  dbCpuMs: number;
  /**
   * The flow client's CPU per flow: the same work on every run of a kind, so what it moves by shows how much the
   * machine's other work inflates everyone's CPU time (shared caches, context switches) in that run.
   */
  clientCpuMs: number;
  failed: number;
  statements?: number;
  writes?: number;
  commits?: number;
}

export interface TargetRow {
  target: string;
  bound: string;
  value: string;
  met: boolean;
}

export interface TargetReport {
  steps: StepRow[];
  flows: { flow: string; runs: FlowFigures[] }[];
  argon2: { perSecond: number; cpuMsPerVerification: number };
  requests: { label: string; requestsPerSecond: number; cpuMs?: number; dbCpuMs?: number; commitP50Ms?: number; failed: number }[];
  targets: TargetRow[];
  /** What a rate depends on besides CPU, where the run shows it (see notes()). */
  notes: string[];
}

const figures = (label: string, r: FlowResult): FlowFigures => ({
  label,
  flowsPerSecond: r.requestsPerSecond,
  serverCpuMs: r.serverCpuMsPerFlow,
  dbCpuMs: r.dbCpuMsPerFlow,
  clientCpuMs: r.clientCpuMsPerFlow,
  failed: r.non2xx + r.errors,
  ...(r.statementsPerFlow === undefined ? {} : { statements: r.statementsPerFlow, writes: r.writesPerFlow, commits: r.commitsPerFlow }),
});

/** argon2id verifications with svc's parameters in this process, `connections` at a time: their CPU each. */
async function argon2Cpu(ctx: BenchContext, seconds: number, connections: number): Promise<{ perSecond: number; cpuMsPerVerification: number }> {
  await argon2Bound(ctx, 1, connections);
  const c0 = process.cpuUsage();
  const r: LoadResult = await argon2Bound(ctx, seconds, connections);
  const c = process.cpuUsage(c0);
  return { perSecond: r.requestsPerSecond, cpuMsPerVerification: (c.user + c.system) / 1000 / r.requests };
}

export async function runTargets(ctx: BenchContext, deps: TargetDeps, o: TargetOptions): Promise<TargetReport> {
  const base = await signInWorld(ctx);
  await samlApp(ctx);
  const sso = await session(base);
  deps.log("counting statements per step");
  const steps = await stepCounts(base, 5);
  const spec = (s: Omit<FlowSpec, "connections" | "warmupSeconds" | "seconds">): FlowSpec => ({
    ...s,
    connections: o.connections,
    warmupSeconds: o.warmupSeconds,
    seconds: o.seconds,
  });
  const flows: TargetReport["flows"] = [];
  const peerClient = { clientId: "bench-web", clientSecret: randomBytes(24).toString("base64url") };
  const signIn = { ...peerClient, redirectUri: base.redirectUri, loginName: base.loginName, password: base.password };
  const peerBase = { poolSize: o.poolSize, clientId: "bench-peer", clientSecret: randomBytes(24).toString("base64url"), ttlSeconds: o.ttlSeconds };
  const peers = [await startPeer("oidc-provider, in memory", { ...peerBase, resource: "urn:svc:bench:api", scope: "api", adapter: "memory", signIn })];
  if (o.databaseUrl) {
    peers.push(
      await startPeer("oidc-provider, PostgreSQL", {
        ...peerBase,
        resource: "urn:svc:bench:api",
        scope: "api",
        adapter: "postgres",
        databaseUrl: o.databaseUrl,
        signIn,
      }),
    );
  }
  const samlify = await startSamlify();
  try {
    const peerSpec = (url: string, kind: FlowSpec["kind"]) => spec({ ...base, ...peerClient, url, loginPat: "", kind });
    const compare = async (flow: string, svcSpec: FlowSpec, peerKind: FlowSpec["kind"], withPeers = peers) => {
      deps.log(`${flow}: svc`);
      const runs = [figures("svc", await deps.runFlow(svcSpec))];
      for (const p of withPeers) {
        deps.log(`${flow}: ${p.label}`);
        runs.push(figures(p.label, await deps.runFlow(peerSpec(p.url, peerKind), childCpuMs(p.child))));
      }
      flows.push({ flow, runs });
    };
    await compare("SSO code flow (authorize → code → token)", spec({ ...base, kind: "sso", session: sso }), "peer-sso");
    await compare(
      "refresh grant (rotating, with an ID token)",
      spec({ ...base, kind: "refresh", refreshTokens: await refreshTokens(base, o.connections) }),
      "peer-refresh",
    );
    const saml = { entityId: SP_ENTITY, acs: SP_ACS, ssoPath: "/saml/v2/SSO" };
    deps.log("SAML login on a session: svc");
    const samlSvc = figures("svc", await deps.runFlow(spec({ ...base, kind: "saml", session: sso, saml })));
    deps.log("SAML login on a session: samlify");
    const samlPeer = figures(
      "samlify",
      await deps.runFlow(spec({ ...base, url: samlify.url, kind: "peer-saml", saml: { ...saml, ssoPath: samlify.ssoPath } }), childCpuMs(samlify.child)),
    );
    flows.push({ flow: "SAML login on an existing session", runs: [samlSvc, samlPeer] });
    await compare("code flow with a password check", spec({ ...base, kind: "code" }), "peer-code", peers.slice(0, 1));
  } finally {
    await Promise.all(peers.map(stopPeer));
    samlify.child.kill("SIGTERM");
  }
  deps.log("argon2id verifications alone, in this process");
  const argon2 = await argon2Cpu(ctx, o.seconds, o.connections);
  const requests = await machineFacing(ctx, deps, o);
  return { steps, flows, argon2, requests, targets: targets(flows, argon2, requests), notes: notes(requests, o.connections) };
}

const SCIM_PAGE = (ctx: BenchContext) => `/scim/v2/${ctx.orgId}/Users?filter=${encodeURIComponent('userName sw "user-1"')}&count=10`;

async function machineFacing(ctx: BenchContext, deps: TargetDeps, o: TargetOptions): Promise<TargetReport["requests"]> {
  const rows: TargetReport["requests"] = [];
  const rowOf = (label: string, r: ScenarioResult | Measured) =>
    rows.push({
      label,
      requestsPerSecond: r.requestsPerSecond,
      cpuMs: "svcCpuMsPerRequest" in r ? r.svcCpuMsPerRequest : (r as Measured).cpuMsPerRequest,
      dbCpuMs: r.dbCpuMsPerRequest,
      commitP50Ms: "commitMs" in r ? r.commitMs?.p50 : undefined,
      failed: r.non2xx + r.errors,
    });
  const managerPat = await userManagerPat(ctx);
  const listBody = JSON.stringify({ query: { limit: 10 } });
  const json = { "content-type": "application/json" };
  const scenarios: Scenario[] = [
    { name: "v2 ListUsers, page of 10, instance administrator", method: "POST", path: "/v2/users", headers: json, body: listBody },
    {
      name: "v2 ListUsers, page of 10, organization's user manager",
      method: "POST",
      path: "/v2/users",
      headers: { ...json, authorization: `Bearer ${managerPat}` },
      body: listBody,
    },
    { name: "SCIM filtered page of 10", method: "GET", path: SCIM_PAGE(ctx), headers: { accept: "application/scim+json" } },
  ];
  for (const s of scenarios) {
    deps.log(s.name);
    rowOf(s.name, await deps.runScenario(s));
  }
  const peerRows = await runPeerComparison(ctx, deps.peer, { rounds: 1, databaseUrl: o.databaseUrl, poolSize: o.poolSize, ttlSeconds: o.ttlSeconds });
  for (const r of peerRows) {
    rowOf(`${r.scenario}: svc`, r.svc);
    for (const p of r.peers) rowOf(`${r.scenario}: ${p.label}`, p.result);
  }
  return rows;
}

/**
 * The persisted client credentials grant against the in-memory peer: svc answers each request after its token's
 * INSERT committed (group commit: one INSERT in flight, src/store/tokens.ts), the peer after nothing. With a
 * closed loop of `connections`, svc can do no more than connections ÷ (one to two commit times) per second whatever
 * its CPU, and on a machine whose disk others use the commit time (PostgreSQL's WAL flush) moves the rate far more
 * than CPU does. So the rate ratio is printed with what bounds it and with the CPU each side spent per request.
 */
function notes(requests: TargetReport["requests"], connections: number): string[] {
  const out: string[] = [];
  for (const scenario of ["OAuth client credentials, opaque", "OAuth introspection of an opaque token"]) {
    const svc = requests.find((r) => r.label === `${scenario}: svc`);
    const peer = requests.find((r) => r.label === `${scenario}: oidc-provider, in memory`);
    if (!svc || !peer || svc.cpuMs === undefined || peer.cpuMs === undefined) continue;
    const cpu = svc.cpuMs + (svc.dbCpuMs ?? 0);
    // A request waits for the INSERT in flight, if any, and then for its own batch's: one to two commits.
    const bound = svc.commitP50Ms
      ? ` each request waits for one to two commits (p50 ${f(svc.commitP50Ms, 1)} ms), which alone holds ${connections} connections to ${f((connections * 1000) / (2 * svc.commitP50Ms), 0)}–${f((connections * 1000) / svc.commitP50Ms, 0)}/s;`
      : "";
    out.push(
      `${scenario}: svc ${f(svc.requestsPerSecond, 0)}/s against ${f(peer.requestsPerSecond, 0)}/s (${x(ratio(svc.requestsPerSecond, peer.requestsPerSecond))});${bound} CPU per request svc ${f(svc.cpuMs, 3)} + PostgreSQL ${f(svc.dbCpuMs, 3)} ms against the peer's ${f(peer.cpuMs, 3)} ms (${x(ratio(cpu, peer.cpuMs))}, svc alone ${x(ratio(svc.cpuMs, peer.cpuMs))}).`,
    );
  }
  return out;
}

const ratio = (a: number, b: number) => (b > 0 ? a / b : Number.NaN);
const x = (n: number) => `${n.toFixed(2)}×`;
const ms = (n: number) => `${n.toFixed(2)} ms`;

function targets(flows: TargetReport["flows"], argon2: TargetReport["argon2"], requests: TargetReport["requests"]): TargetRow[] {
  const flow = (prefix: string, label: string) => flows.find((f) => f.flow.startsWith(prefix))?.runs.find((r) => r.label === label);
  const req = (label: string) => requests.find((r) => r.label === label);
  const out: TargetRow[] = [];
  const add = (target: string, bound: string, value: number, met: (v: number) => boolean, show: (v: number) => string) =>
    out.push({ target, bound, value: show(value), met: Number.isFinite(value) && met(value) });
  const svcSso = flow("SSO", "svc");
  const memSso = flow("SSO", "oidc-provider, in memory");
  const pgSso = flow("SSO", "oidc-provider, PostgreSQL");
  if (svcSso && memSso) {
    add("SSO code flow: svc's CPU ÷ oidc-provider's (in memory)", "≤ 0.8×", ratio(svcSso.serverCpuMs, memSso.serverCpuMs), (v) => v <= 0.8, x);
    add(
      "SSO code flow: svc + PostgreSQL CPU ÷ oidc-provider's (in memory)",
      "≤ 1.2×",
      ratio(svcSso.serverCpuMs + svcSso.dbCpuMs, memSso.serverCpuMs),
      (v) => v <= 1.2,
      x,
    );
  }
  const svcSaml = flow("SAML", "svc");
  const samlify = flow("SAML", "samlify");
  if (svcSaml && samlify) {
    add("SAML login on a session: svc's CPU ÷ samlify's", "≤ 1.0×", ratio(svcSaml.serverCpuMs, samlify.serverCpuMs), (v) => v <= 1.0, x);
    add(
      "SAML login on a session: svc + PostgreSQL CPU ÷ samlify's",
      "≤ 1.4×",
      ratio(svcSaml.serverCpuMs + svcSaml.dbCpuMs, samlify.serverCpuMs),
      (v) => v <= 1.4,
      x,
    );
  }
  const code = flow("code flow with a password", "svc");
  if (code)
    add(
      "code flow with a password check: svc's CPU ÷ one argon2id verification's",
      "≤ 1.2×",
      ratio(code.serverCpuMs, argon2.cpuMsPerVerification),
      (v) => v <= 1.2,
      x,
    );
  const refresh = flow("refresh", "svc");
  if (refresh) add("refresh grant: svc + PostgreSQL CPU per refresh", "≤ 1.0 ms", refresh.serverCpuMs + refresh.dbCpuMs, (v) => v <= 1.0, ms);
  if (svcSso && pgSso)
    add("SSO code flows/s ÷ oidc-provider with PostgreSQL", "≥ 1.5×", ratio(svcSso.flowsPerSecond, pgSso.flowsPerSecond), (v) => v >= 1.5, x);
  const pgRefresh = flow("refresh", "oidc-provider, PostgreSQL");
  if (refresh && pgRefresh)
    add("refreshes/s ÷ oidc-provider with PostgreSQL", "≥ 1.5×", ratio(refresh.flowsPerSecond, pgRefresh.flowsPerSecond), (v) => v >= 1.5, x);
  const pair = (svc: string, peer: string) => ratio(req(svc)?.requestsPerSecond ?? Number.NaN, req(peer)?.requestsPerSecond ?? Number.NaN);
  const intro = "OAuth introspection of an opaque token";
  const cc = "OAuth client credentials, opaque";
  add("introspection/s ÷ oidc-provider (in memory)", "≥ 1.5×", pair(`${intro}: svc`, `${intro}: oidc-provider, in memory`), (v) => v >= 1.5, x);
  add(
    "client credentials/s (tokens persisted) ÷ oidc-provider (in memory)",
    "≥ 1.0×",
    pair(`${cc}: svc`, `${cc}: oidc-provider, in memory`),
    (v) => v >= 1.0,
    x,
  );
  const scim = "SCIM filtered page of 10";
  add(
    "v2 ListUsers (10 of 10,000), instance administrator ÷ SCIM page",
    "≥ 0.7×",
    pair("v2 ListUsers, page of 10, instance administrator", scim),
    (v) => v >= 0.7,
    x,
  );
  add(
    "v2 ListUsers (10 of 10,000), organization's user manager ÷ SCIM page",
    "≥ 0.7×",
    pair("v2 ListUsers, page of 10, organization's user manager", scim),
    (v) => v >= 0.7,
    x,
  );
  return out;
}

const f = (n: number | undefined, d = 2) =>
  n === undefined || !Number.isFinite(n) ? "" : n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => (i === 0 ? "-".repeat(w) : `${"-".repeat(w - 1)}:`)).join(" | ")} |`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

/** The report: the targets, then the flows, the machine-facing requests and the statements per step behind them. */
export function targetReport(r: TargetReport): string {
  const targetsTable = table(
    ["target", "bound", "this run", "met"],
    r.targets.map((t) => [t.target, t.bound, t.value, t.met ? "yes" : "no"]),
  );
  const flowRows = r.flows.flatMap((fl) =>
    fl.runs.map((run) => [
      `${fl.flow}: ${run.label}`,
      f(run.flowsPerSecond, 0),
      f(run.serverCpuMs),
      f(run.dbCpuMs),
      f(run.serverCpuMs + run.dbCpuMs),
      f(run.clientCpuMs),
      f(run.statements, 1),
      f(run.writes, 1),
      f(run.commits, 1),
      String(run.failed),
    ]),
  );
  const flowsTable = table(
    [
      "flow: server",
      "flows/s",
      "server CPU ms/flow",
      "PostgreSQL CPU ms/flow",
      "together",
      "client CPU ms/flow",
      "statements/flow",
      "writes/flow",
      "commits/flow",
      "failed",
    ],
    [
      ...flowRows,
      ["argon2id verification, svc's parameters, in svc's process", f(r.argon2.perSecond, 0), f(r.argon2.cpuMsPerVerification), "", "", "", "", "", "", "0"],
    ],
  );
  const requestsTable = table(
    ["request: server", "req/s", "server CPU ms/req", "PostgreSQL CPU ms/req", "svc's commit round trip, p50 ms", "failed"],
    r.requests.map((q) => [q.label, f(q.requestsPerSecond, 0), f(q.cpuMs, 3), f(q.dbCpuMs, 3), f(q.commitP50Ms, 1), String(q.failed)]),
  );
  const stepsTable = table(
    ["flow", "step", "statements", "writes", "commits"],
    r.steps.map((s) => [s.flow, s.step, f(s.statements, 1), f(s.writes, 1), f(s.commits, 1)]),
  );
  return [
    "### Targets",
    "",
    targetsTable,
    "",
    "### Flows, CPU per flow of each process",
    "",
    flowsTable,
    "",
    "### Machine-facing requests",
    "",
    requestsTable,
    "",
    ...r.notes.map((n) => `- ${n}`),
    ...(r.notes.length ? [""] : []),
    "### svc's statements per step (one flow at a time, averaged over 5)",
    "",
    stepsTable,
    "",
  ].join("\n");
}
