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
  dataDir: string;
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
  /** AES-256-GCM key encrypting signing keys at rest (SVC_MASTER_KEY); generated into the data directory on the embedded database when unset. */
  masterKey?: Buffer;
  /** Access token lifetimes in seconds. */
  accessTokenLifetimeClientCredentials: number;
  accessTokenLifetimeJwtProfile: number;
  /** A new signing key takes over after this many seconds. */
  signingKeyRotationSeconds: number;
  /** A replaced signing key still verifies tokens for this many seconds (at least the longest token lifetime). */
  signingKeyOverlapSeconds: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v.trim() === "" ? undefined : v.trim();
  };
  const int = (name: string, def: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be an integer between ${min} and ${max}, got "${raw}"`);
      return def;
    }
    return n;
  };
  const url = (name: string, def: string | undefined, protocols: string[]): string | undefined => {
    const raw = str(name) ?? def;
    if (raw === undefined) return undefined;
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) {
        problems.push(`${name} must use ${protocols.join(" or ")}, got "${u.protocol}"`);
      }
      return raw;
    } catch {
      problems.push(`${name} must be an absolute URL, got "${raw}"`);
      return def;
    }
  };

  const port = int("SVC_PORT", 8080, 0, 65535);
  const dataDir = path.resolve(str("SVC_DATA_DIR") ?? "./data");
  const externalUrl = (url("SVC_EXTERNAL_URL", `http://localhost:${port}`, ["http:", "https:"]) as string).replace(/\/+$/, "");
  const databaseUrl = url("SVC_DATABASE_URL", undefined, ["postgres:", "postgresql:"]);
  const logLevel = (str("SVC_LOG_LEVEL") ?? "info") as Config["logLevel"];
  if (!["fatal", "error", "warn", "info", "debug", "trace", "silent"].includes(logLevel)) {
    problems.push(`SVC_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "${logLevel}"`);
  }
  const adminPassword = env.SVC_ADMIN_PASSWORD === undefined || env.SVC_ADMIN_PASSWORD === "" ? undefined : env.SVC_ADMIN_PASSWORD;
  const instanceName = str("SVC_INSTANCE_NAME") ?? "svc";
  const defaultOrgName = str("SVC_DEFAULT_ORG_NAME") ?? "Default";
  if (defaultOrgName.length > 200) problems.push("SVC_DEFAULT_ORG_NAME must be at most 200 characters");

  let masterKey: Buffer | undefined;
  const rawMasterKey = str("SVC_MASTER_KEY");
  if (rawMasterKey !== undefined) {
    masterKey = parseMasterKey(rawMasterKey);
    if (!masterKey) problems.push("SVC_MASTER_KEY must be 32 bytes, as 64 hex digits or base64 (44 characters)");
  } else if (databaseUrl) {
    problems.push(
      "SVC_MASTER_KEY is required with SVC_DATABASE_URL: every replica must encrypt and decrypt signing keys with the same key (generate one with `openssl rand -base64 32`)",
    );
  }
  const accessTokenLifetimeClientCredentials = int("SVC_ACCESS_TOKEN_LIFETIME_CLIENT_CREDENTIALS", 43_200, 60, 31 * 86_400);
  const accessTokenLifetimeJwtProfile = int("SVC_ACCESS_TOKEN_LIFETIME_JWT_PROFILE", 3_600, 60, 31 * 86_400);
  const signingKeyRotationSeconds = int("SVC_SIGNING_KEY_ROTATION", 30 * 86_400, 60, 3_650 * 86_400);
  const longest = Math.max(accessTokenLifetimeClientCredentials, accessTokenLifetimeJwtProfile);
  const signingKeyOverlapSeconds = int("SVC_SIGNING_KEY_OVERLAP", longest + 3_600, 0, 3_650 * 86_400);
  if (signingKeyOverlapSeconds < longest) {
    problems.push(`SVC_SIGNING_KEY_OVERLAP must be at least the longest access token lifetime (${longest} s), so that no issued token becomes unverifiable`);
  }

  const config: Config = {
    host: str("SVC_HOST") ?? "0.0.0.0",
    port,
    externalUrl,
    externalUrlConfigured: (env.SVC_EXTERNAL_URL ?? "").trim() !== "",
    databaseUrl,
    databasePoolSize: int("SVC_DATABASE_POOL_SIZE", 10, 1, 1000),
    dataDir,
    firstInstancePatPath: path.resolve(str("SVC_FIRST_INSTANCE_PAT_PATH") ?? path.join(dataDir, "admin.pat")),
    adminPassword,
    instanceName,
    defaultOrgName,
    logLevel,
    shutdownGraceMs: int("SVC_SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    sniffTimeoutMs: int("SVC_SNIFF_TIMEOUT_MS", 10_000, 100, 600_000),
    maxRequestBytes: int("SVC_MAX_REQUEST_BYTES", 4 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    requestTimeoutMs: int("SVC_REQUEST_TIMEOUT_MS", 300_000, 1_000, 3_600_000),
    http2MaxConcurrentStreams: int("SVC_HTTP2_MAX_CONCURRENT_STREAMS", 250, 1, 10_000),
    masterKey,
    accessTokenLifetimeClientCredentials,
    accessTokenLifetimeJwtProfile,
    signingKeyRotationSeconds,
    signingKeyOverlapSeconds,
  };
  if (problems.length) throw new ConfigError(problems);
  return config;
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
