// What the token service runs on: the store, the signing keys, the issuer,
// lifetimes, and the caches in front of the store (filled here, invalidated by
// src/store/auth-cache.ts across replicas). Created once by the composition
// root (src/http/oauth createOAuth) and handed to whatever authenticates.
import type { Logger } from "pino";
import type { SigningKeys } from "../../crypto/signing-keys.js";
import type { Store } from "../../store/index.js";
import type { ActionTargets } from "../actions/ports.js";
import type { Clock } from "../context.js";
import type { FailureLimits } from "../limits.js";
import type { SignInSignals } from "../signals.js";
import type { ClientRecord, MachineKeyRecord } from "./client-auth.js";
import type { ResolvedToken } from "./resolve.js";

/** A cache whose entries are tagged with the user and organization they depend on (TaggedCache in the store). */
export interface AuthCache<V> {
  get(key: string): V | undefined;
  generation(): number;
  set(key: string, value: V, generation: number, tags: { userId?: string; orgId?: string }, ttlMs?: number): void;
  /** The cached value, or `read`'s (stored with its tags; undefined: nothing stored); concurrent misses share one read. */
  load(key: string, read: () => Promise<{ value: V; tags: { userId?: string; orgId?: string }; ttlMs?: number } | undefined>): Promise<V | undefined>;
}

export interface OAuthRuntime {
  store: Store;
  instanceId: string;
  issuer: string;
  keys: SigningKeys;
  clock: Clock;
  log: Logger;
  /** Lifetimes in seconds (see Config). */
  lifetimes: {
    clientCredentials: number;
    jwtProfile: number;
    user: number;
    idToken: number;
    refresh: number;
    refreshIdle: number;
    /** How long an exchanged refresh token still gets its rotation's answer again (grants/refresh-reuse.ts); 0: never. */
    refreshReuse?: number;
    authRequest: number;
    authCode: number;
  };
  /** The login UI the authorization endpoint sends browsers to, unless the application names its own. */
  loginUrl: string;
  /** The origins an application's own login UI may be on (SVC_EXTERNAL_URL's, SVC_LOGIN_URL's, SVC_LOGIN_UI_ALLOWED_ORIGINS). */
  loginOrigins?: readonly string[];
  /** Failed client authentications and assertions counted per client id and source address. */
  limits: FailureLimits;
  /** The metrics' count of finished auth requests (prompt=none finishes here). */
  signals?: SignInSignals;
  tokens: AuthCache<ResolvedToken>;
  clients: AuthCache<ClientRecord | null>;
  /** Machine keys with their user, for the JWT profile grant (invalidated per user). */
  machineKeys: AuthCache<MachineKeyRecord | null>;
  /**
   * Role claims at issuance, per user, scopes and audience; tagged like
   * resolved tokens (the user and its organization), which is what grant,
   * project and organization changes invalidate.
   */
  roleClaims: AuthCache<Record<string, unknown>>;
  /** The targets of the actions' functions (absent: none run, as in tests that build a runtime by hand). */
  actions?: ActionTargets;
}
