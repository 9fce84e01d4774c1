// Configuration comes only from SVC_* environment variables, validated once
// at start with messages that name the variable and what is wrong.
import path from "node:path";

export interface Config {
  host: string;
  port: number;
  externalUrl: string;
  /** Whether SVC_EXTERNAL_URL was set (rather than defaulted from the port): then it is the base of absolute URLs in responses. */
  externalUrlConfigured: boolean;
  /** PostgreSQL connection string; the embedded PGlite database when unset. */
  databaseUrl?: string;
  databasePoolSize: number;
  /** Failed authentications allowed per client id or user, and per source address, in a window (0: unlimited). */
  rateLimitClientFailures: number;
  rateLimitAddressFailures: number;
  rateLimitWindowSeconds: number;
  /** PostgreSQL statement_timeout of request connections; a frozen server is given up on a little after it. */
  databaseStatementTimeoutMs: number;
  databaseLockTimeoutMs: number;
  /** Longest wait for a pool connection (or a new one to open). */
  databaseAcquireTimeoutMs: number;
  /** A request's whole database wait (connections, transactions, statements), counted from its first database call. */
  databaseRequestTimeoutMs: number;
  dataDir: string;
  /** Whether a new embedded database starts as a copy of the build's snapshot (src/store/snapshot.ts). */
  embeddedSnapshot: boolean;
  firstInstancePatPath: string;
  adminPassword?: string;
  instanceName: string;
  defaultOrgName: string;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  shutdownGraceMs: number;
  /** Longest time a client may wait for a connection to announce its protocol. */
  sniffTimeoutMs: number;
  maxRequestBytes: number;
  /** Longest time a client may take to send a whole request (headers and body), over HTTP/1.1 and HTTP/2. */
  requestTimeoutMs: number;
  /** Streams one HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
  http2MaxConcurrentStreams: number;
  /** Requests in progress past which new ones are answered 503 at once (0: no limit). */
  maxInflightRequests: number;
  /**
   * A second port that serves only /healthz, /readyz and /metrics (SVC_PROBE_PORT; none when unset): its own accept
   * queue and no request log, shedding or protocol sniffing, so that probes are answered while the main port is flooded.
   */
  probePort?: number;
  /** AES-256-GCM key encrypting signing keys at rest (SVC_MASTER_KEY); generated into the data directory on the embedded database when unset. */
  masterKey?: Buffer;
  /** The master key being replaced (SVC_MASTER_KEY_PREVIOUS): at start, what it sealed is sealed again with masterKey. */
  previousMasterKey?: Buffer;
  /** Access token lifetimes in seconds. */
  accessTokenLifetimeClientCredentials: number;
  accessTokenLifetimeJwtProfile: number;
  /** Lifetimes in seconds of what the authorization code flow issues (users' access tokens, ID tokens, refresh tokens). */
  accessTokenLifetimeUser: number;
  idTokenLifetime: number;
  /** A refresh token family ends this long after the sign-in, however often it is used. */
  refreshTokenLifetime: number;
  /** A refresh token not used for this long expires. */
  refreshTokenIdleLifetime: number;
  /** Seconds an exchanged refresh token still gets its rotation's answer again (a lost answer's retry); 0: never. */
  refreshTokenReuseInterval: number;
  /** How long a login UI has to finish an auth request, and how long its authorization code is good for. */
  authRequestLifetime: number;
  authCodeLifetime: number;
  /** Where /oauth/v2/authorize sends the browser (with ?authRequest=<id>) unless the application names its own login UI. */
  loginUrl: string;
  /** SVC_LOGIN_UI_ALLOWED_ORIGINS: origins besides the instance's own that an application's login base URL may name. */
  loginUiAllowedOrigins: string[];
  /**
   * Which proxies' X-Forwarded-For/-Proto the hosted login believes (SVC_TRUST_PROXY, Express's "trust proxy"): false
   * (the default: none), true (any), a hop count, or addresses/CIDRs/loopback|linklocal|uniquelocal, comma-separated.
   */
  trustProxy: boolean | number | string;
  /** SVC_LOG_FORMAT: json lines, pretty lines, or auto (pretty when stdout is a terminal). */
  logFormat: "auto" | "json" | "pretty";
  /** When set (SVC_METRICS_TOKEN), /metrics answers only this bearer token. */
  metricsToken?: string;
  /** A new signing key takes over after this many seconds. */
  signingKeyRotationSeconds: number;
  /** A replaced signing key still verifies tokens for this many seconds (at least the longest token lifetime). */
  signingKeyOverlapSeconds: number;
  /** A new SAML signing certificate takes over after this many seconds. */
  samlCertificateRotationSeconds: number;
  /** A replaced SAML certificate stays in the metadata for this many seconds (SPs refresh their copy meanwhile). */
  samlCertificateOverlapSeconds: number;
  /** Every AuthnRequest must be signed (SVC_SAML_WANT_AUTHN_REQUESTS_SIGNED; the metadata says so), not only those of SPs whose metadata promises it. */
  samlWantAuthnRequestsSigned: boolean;
  /** SVC_SAML_METADATA_ALLOW_PRIVATE: metadataUrl may be plain http and point to private, loopback or link-local addresses. */
  samlMetadataAllowPrivate: boolean;
  /** SVC_ACTIONS_ALLOW_PRIVATE: action targets may be on private, loopback or link-local addresses. */
  actionsAllowPrivate: boolean;
  /** Attempts of an event's delivery to a (call or webhook) target before it is dead. */
  actionsDeliveryAttempts: number;
  /** The delay before a delivery's first retry, in milliseconds; each further one doubles it (jittered, at most 1 h). */
  actionsDeliveryBackoffMs: number;
  /** Hours delivered and dead deliveries are kept. */
  actionsDeliveryRetentionHours: number;
  /** SMTP server of the e-mails svc sends (codes, links): smtp:// or smtps:// with credentials; none when unset. */
  smtpUrl?: string;
  /** The From of those e-mails (SVC_SMTP_FROM), required with smtpUrl. */
  smtpFrom?: string;
  /** Ceilings on the cost parameters of imported password hashes (src/crypto/passwords.ts). */
  passwordHashMaxPbkdf2Iterations: number;
  passwordHashMaxBcryptCost: number;
  passwordHashMaxArgon2MemoryKiB: number;
  passwordHashMaxArgon2Passes: number;
  passwordHashMaxArgon2Parallelism: number;
  passwordHashMaxScryptMemoryKiB: number;
  passwordHashMaxScryptParallelism: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

const DAY = 86_400;
const LOG_LEVELS: readonly Config["logLevel"][] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

type IntKey = {
  [K in keyof Config]: Config[K] extends number ? K : never;
}[keyof Config] &
  string;

/** The integer settings: variable, default, lowest and highest value. The signing key overlap defaults from the token lifetimes (below). */
const INTEGERS: Record<Exclude<IntKey, "signingKeyOverlapSeconds">, [name: string, def: number, min: number, max: number]> = {
  port: ["SVC_PORT", 8080, 0, 65535],
  databasePoolSize: ["SVC_DATABASE_POOL_SIZE", 10, 1, 1000],
  rateLimitClientFailures: ["SVC_RATE_LIMIT_CLIENT_FAILURES", 10, 0, 1_000_000],
  rateLimitAddressFailures: ["SVC_RATE_LIMIT_ADDRESS_FAILURES", 100, 0, 1_000_000],
  rateLimitWindowSeconds: ["SVC_RATE_LIMIT_WINDOW_SECONDS", 60, 1, 86_400],
  databaseStatementTimeoutMs: ["SVC_DATABASE_STATEMENT_TIMEOUT_MS", 5_000, 100, 3_600_000],
  databaseLockTimeoutMs: ["SVC_DATABASE_LOCK_TIMEOUT_MS", 2_000, 100, 3_600_000],
  databaseAcquireTimeoutMs: ["SVC_DATABASE_ACQUIRE_TIMEOUT_MS", 3_000, 100, 600_000],
  databaseRequestTimeoutMs: ["SVC_DATABASE_REQUEST_TIMEOUT_MS", 7_000, 100, 3_600_000],
  shutdownGraceMs: ["SVC_SHUTDOWN_GRACE_MS", 10_000, 0, 600_000],
  sniffTimeoutMs: ["SVC_SNIFF_TIMEOUT_MS", 10_000, 100, 600_000],
  maxRequestBytes: ["SVC_MAX_REQUEST_BYTES", 4 * 1024 * 1024, 1024, 1024 * 1024 * 1024],
  requestTimeoutMs: ["SVC_REQUEST_TIMEOUT_MS", 300_000, 1_000, 3_600_000],
  http2MaxConcurrentStreams: ["SVC_HTTP2_MAX_CONCURRENT_STREAMS", 250, 1, 10_000],
  maxInflightRequests: ["SVC_MAX_INFLIGHT_REQUESTS", 0, 0, 1_000_000],
  accessTokenLifetimeClientCredentials: ["SVC_ACCESS_TOKEN_LIFETIME_CLIENT_CREDENTIALS", 43_200, 60, 31 * DAY],
  accessTokenLifetimeJwtProfile: ["SVC_ACCESS_TOKEN_LIFETIME_JWT_PROFILE", 3_600, 60, 31 * DAY],
  accessTokenLifetimeUser: ["SVC_ACCESS_TOKEN_LIFETIME_USER", 43_200, 60, 31 * DAY],
  idTokenLifetime: ["SVC_ID_TOKEN_LIFETIME", 43_200, 60, 31 * DAY],
  refreshTokenLifetime: ["SVC_REFRESH_TOKEN_LIFETIME", 90 * DAY, 60, 3_650 * DAY],
  refreshTokenIdleLifetime: ["SVC_REFRESH_TOKEN_IDLE_LIFETIME", 30 * DAY, 60, 3_650 * DAY],
  refreshTokenReuseInterval: ["SVC_REFRESH_TOKEN_REUSE_INTERVAL", 30, 0, 300],
  authRequestLifetime: ["SVC_AUTH_REQUEST_LIFETIME", 600, 60, DAY],
  authCodeLifetime: ["SVC_AUTH_CODE_LIFETIME", 60, 10, 600],
  signingKeyRotationSeconds: ["SVC_SIGNING_KEY_ROTATION", 30 * DAY, 60, 3_650 * DAY],
  samlCertificateRotationSeconds: ["SVC_SAML_CERTIFICATE_ROTATION", 365 * DAY, 60, 3_650 * DAY],
  samlCertificateOverlapSeconds: ["SVC_SAML_CERTIFICATE_OVERLAP", 30 * DAY, 0, 3_650 * DAY],
  actionsDeliveryAttempts: ["SVC_ACTIONS_DELIVERY_ATTEMPTS", 10, 1, 100],
  actionsDeliveryBackoffMs: ["SVC_ACTIONS_DELIVERY_BACKOFF_MS", 1_000, 10, 3_600_000],
  actionsDeliveryRetentionHours: ["SVC_ACTIONS_DELIVERY_RETENTION_HOURS", 168, 1, 87_600],
  passwordHashMaxPbkdf2Iterations: ["SVC_PASSWORD_HASH_MAX_PBKDF2_ITERATIONS", 1_000_000, 1_000, 100_000_000],
  passwordHashMaxBcryptCost: ["SVC_PASSWORD_HASH_MAX_BCRYPT_COST", 13, 4, 31],
  passwordHashMaxArgon2MemoryKiB: ["SVC_PASSWORD_HASH_MAX_ARGON2_MEMORY_KIB", 65_536, 1_024, 4 * 1024 * 1024],
  passwordHashMaxArgon2Passes: ["SVC_PASSWORD_HASH_MAX_ARGON2_PASSES", 10, 1, 1_000],
  passwordHashMaxArgon2Parallelism: ["SVC_PASSWORD_HASH_MAX_ARGON2_PARALLELISM", 8, 1, 255],
  passwordHashMaxScryptMemoryKiB: ["SVC_PASSWORD_HASH_MAX_SCRYPT_MEMORY_KIB", 65_536, 1_024, 4 * 1024 * 1024],
  passwordHashMaxScryptParallelism: ["SVC_PASSWORD_HASH_MAX_SCRYPT_PARALLELISM", 4, 1, 1_000],
};

/** A comma-separated list of origins (scheme://host[:port], http or https, nothing else), normalized. */
function origins(r: EnvReader, name: string): string[] {
  const out: string[] = [];
  for (const raw of (r.str(name) ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter(Boolean)) {
    let u: URL | undefined;
    try {
      u = new URL(raw);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== "https:" && u.protocol !== "http:") || raw.replace(/\/$/, "") !== u.origin) {
      r.problems.push(`${name} takes origins (https://host[:port]), comma-separated; got "${raw}"`);
    } else out.push(u.origin);
  }
  return out;
}

/** Reads variables and collects what is wrong with them, so that one start reports every problem at once. */
class EnvReader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  /** The trimmed value; undefined when unset or blank. */
  str(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === "" ? undefined : v.trim();
  }

  int(name: string, def: number, min: number, max: number): number {
    const raw = this.str(name);
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
      return def;
    }
    return n;
  }

  /**
   * `hostless`: a URL whose host is empty after a user name (`postgresql://user@/db?host=/var/run/postgresql`, how pg
   * and libpq name a Unix-domain socket) is accepted too: WHATWG URLs refuse credentials without a host, so it is
   * checked with a placeholder host; the value is kept as given (the driver reads it).
   */
  url(name: string, def: string | undefined, protocols: string[], hostless = false): string | undefined {
    const raw = this.str(name) ?? def;
    if (raw === undefined) return undefined;
    try {
      const u = new URL(hostless && !URL.canParse(raw) ? raw.replace(/^([a-z]+:\/\/[^/@?#]*)@\//i, "$1@localhost/") : raw);
      if (!protocols.includes(u.protocol)) this.problems.push(`${name} must use ${protocols.join(" or ")}, got "${u.protocol}"`);
      return raw;
    } catch {
      this.problems.push(`${name} must be an absolute URL, got "${raw}"`);
      return def;
    }
  }
}

/**
 * `masterKeyRequired: false`: SVC_MASTER_KEY may be missing on PostgreSQL (`svc migrate`, which reads and writes no
 * sealed secret: a release job needs only the database).
 */
export function loadConfig(env: Env = process.env, opts: { masterKeyRequired?: boolean } = {}): Config {
  const r = new EnvReader(env);
  const ints = Object.fromEntries(Object.entries(INTEGERS).map(([key, [name, def, min, max]]) => [key, r.int(name, def, min, max)])) as Record<
    keyof typeof INTEGERS,
    number
  >;
  // A request's database budget defaults to what one statement may take on a frozen server (its timeout and the 2 s
  // given on top): raising the statement timeout for long statements raises the budget with it.
  if (r.str("SVC_DATABASE_REQUEST_TIMEOUT_MS") === undefined) ints.databaseRequestTimeoutMs = ints.databaseStatementTimeoutMs + 2_000;
  const dataDir = path.resolve(r.str("SVC_DATA_DIR") ?? "./data");
  const databaseUrl = r.url("SVC_DATABASE_URL", undefined, ["postgres:", "postgresql:"], true);
  const externalUrl = (r.url("SVC_EXTERNAL_URL", `http://localhost:${ints.port}`, ["http:", "https:"]) as string).replace(/\/+$/, "");
  const config: Config = {
    ...ints,
    host: r.str("SVC_HOST") ?? "127.0.0.1",
    externalUrl,
    // The hosted login's address until an operator points sign-ins at a login UI of their own.
    loginUrl: r.url("SVC_LOGIN_URL", `${externalUrl}/ui/login/login`, ["http:", "https:"]) as string,
    loginUiAllowedOrigins: origins(r, "SVC_LOGIN_UI_ALLOWED_ORIGINS"),
    externalUrlConfigured: (env.SVC_EXTERNAL_URL ?? "").trim() !== "",
    trustProxy: trustProxy(r),
    metricsToken: r.str("SVC_METRICS_TOKEN"),
    logFormat: logFormat(r),
    databaseUrl,
    dataDir,
    ...(r.str("SVC_PROBE_PORT") === undefined ? {} : { probePort: r.int("SVC_PROBE_PORT", 0, 0, 65535) }),
    embeddedSnapshot: r.str("SVC_EMBEDDED_SNAPSHOT") === undefined || flag(r, "SVC_EMBEDDED_SNAPSHOT"),
    firstInstancePatPath: path.resolve(r.str("SVC_FIRST_INSTANCE_PAT_PATH") ?? path.join(dataDir, "admin.pat")),
    adminPassword: env.SVC_ADMIN_PASSWORD === undefined || env.SVC_ADMIN_PASSWORD === "" ? undefined : env.SVC_ADMIN_PASSWORD,
    instanceName: r.str("SVC_INSTANCE_NAME") ?? "svc",
    defaultOrgName: r.str("SVC_DEFAULT_ORG_NAME") ?? "Default",
    logLevel: logLevel(r),
    masterKey: masterKey(r, opts.masterKeyRequired === false ? undefined : databaseUrl),
    previousMasterKey: previousMasterKey(r),
    ...smtp(r),
    samlWantAuthnRequestsSigned: flag(r, "SVC_SAML_WANT_AUTHN_REQUESTS_SIGNED"),
    samlMetadataAllowPrivate: flag(r, "SVC_SAML_METADATA_ALLOW_PRIVATE"),
    actionsAllowPrivate: flag(r, "SVC_ACTIONS_ALLOW_PRIVATE"),
    signingKeyOverlapSeconds: signingKeyOverlap(
      r,
      Math.max(ints.accessTokenLifetimeClientCredentials, ints.accessTokenLifetimeJwtProfile, ints.accessTokenLifetimeUser, ints.idTokenLifetime),
    ),
  };
  if (config.refreshTokenIdleLifetime > config.refreshTokenLifetime) {
    r.problems.push("SVC_REFRESH_TOKEN_IDLE_LIFETIME must not be longer than SVC_REFRESH_TOKEN_LIFETIME");
  }
  if (config.defaultOrgName.length > 200) r.problems.push("SVC_DEFAULT_ORG_NAME must be at most 200 characters");
  if (r.problems.length) throw new ConfigError(r.problems);
  return config;
}

function logLevel(r: EnvReader): Config["logLevel"] {
  const level = (r.str("SVC_LOG_LEVEL") ?? "info") as Config["logLevel"];
  if (!LOG_LEVELS.includes(level)) r.problems.push(`SVC_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${level}"`);
  return level;
}

function masterKey(r: EnvReader, databaseUrl: string | undefined): Buffer | undefined {
  const raw = r.str("SVC_MASTER_KEY");
  if (raw !== undefined) {
    const key = parseMasterKey(raw);
    if (!key) r.problems.push("SVC_MASTER_KEY must be 32 bytes, as 64 hex digits or base64 (44 characters)");
    return key;
  }
  if (databaseUrl) {
    r.problems.push(
      "SVC_MASTER_KEY is required with SVC_DATABASE_URL: every replica must encrypt and decrypt signing keys with the same key (generate one with `openssl rand -base64 32`)",
    );
  }
  return undefined;
}

function previousMasterKey(r: EnvReader): Buffer | undefined {
  const raw = r.str("SVC_MASTER_KEY_PREVIOUS");
  if (raw === undefined) return undefined;
  const key = parseMasterKey(raw);
  if (!key) r.problems.push("SVC_MASTER_KEY_PREVIOUS must be 32 bytes, as 64 hex digits or base64 (44 characters)");
  if (r.str("SVC_MASTER_KEY") === undefined) r.problems.push("SVC_MASTER_KEY_PREVIOUS needs SVC_MASTER_KEY, the key that replaces it");
  return key;
}

function logFormat(r: EnvReader): Config["logFormat"] {
  const raw = r.str("SVC_LOG_FORMAT") ?? "auto";
  if (raw === "auto" || raw === "json" || raw === "pretty") return raw;
  r.problems.push(`SVC_LOG_FORMAT must be auto, json or pretty, got "${raw}"`);
  return "auto";
}

function flag(r: EnvReader, name: string): boolean {
  const raw = r.str(name);
  if (raw !== undefined && raw !== "true" && raw !== "false") r.problems.push(`${name} must be true or false`);
  return raw === "true";
}

const PROXY_WORD = /^(loopback|linklocal|uniquelocal|[0-9a-fA-F.:]+(\/\d{1,3})?)$/;

function trustProxy(r: EnvReader): Config["trustProxy"] {
  const raw = r.str("SVC_TRUST_PROXY");
  if (raw === undefined || raw === "false") return false;
  if (raw === "true") return true;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const parts = raw.split(",").map((p) => p.trim());
  if (parts.some((p) => !PROXY_WORD.test(p))) {
    r.problems.push("SVC_TRUST_PROXY must be true, false, a hop count, or comma-separated addresses/CIDRs (or loopback, linklocal, uniquelocal)");
    return false;
  }
  return parts.join(",");
}

function smtp(r: EnvReader): Pick<Config, "smtpUrl" | "smtpFrom"> {
  const smtpUrl = r.url("SVC_SMTP_URL", undefined, ["smtp:", "smtps:"]);
  const smtpFrom = r.str("SVC_SMTP_FROM");
  if (smtpUrl && !smtpFrom) r.problems.push('SVC_SMTP_FROM is required with SVC_SMTP_URL (the sender address, e.g. "svc <no-reply@example.com>")');
  if (smtpFrom && !smtpUrl) r.problems.push("SVC_SMTP_FROM needs SVC_SMTP_URL, the server that sends the mail");
  if (smtpFrom && /[\r\n]/.test(smtpFrom)) r.problems.push("SVC_SMTP_FROM must be one line");
  return { smtpUrl, smtpFrom };
}

/** A replaced signing key must verify every token it signed until the longest-lived one expires. */
function signingKeyOverlap(r: EnvReader, longestTokenLifetime: number): number {
  const overlap = r.int("SVC_SIGNING_KEY_OVERLAP", longestTokenLifetime + 3_600, 0, 3_650 * DAY);
  if (overlap < longestTokenLifetime) {
    r.problems.push(
      `SVC_SIGNING_KEY_OVERLAP must be at least the longest access token lifetime (${longestTokenLifetime} s), so that no issued token becomes unverifiable`,
    );
  }
  return overlap;
}

/** 32 bytes as 64 hex digits or base64/base64url; undefined when it is anything else. */
export function parseMasterKey(raw: string): Buffer | undefined {
  const text = raw.trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, "hex");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const key = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    return key.length === 32 ? key : undefined;
  }
  return undefined;
}
