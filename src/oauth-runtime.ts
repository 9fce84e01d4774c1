// Composition of the OAuth token runtime: the signing keys over the store,
// the caches in front of the store and their invalidation (in this process
// and, through PostgreSQL LISTEN, from other replicas), and the housekeeping
// timer. Called by the composition root; the runtime is then handed to the
// OAuth adapter and to whatever authenticates bearer tokens.
import type { Logger } from "pino";
import { DeliveryWorker } from "./actions/deliveries.js";
import type { LogoutTokenSigner } from "./actions/logout-tokens.js";
import { ActionRunner } from "./actions/runner.js";
import type { Config } from "./config.js";
import { SamlCertificates } from "./crypto/saml-certificates.js";
import { checkSealedSecrets } from "./crypto/sealer.js";
import { embeddedMasterKey } from "./crypto/secretbox.js";
import { SigningKeys } from "./crypto/signing-keys.js";
import type { Clock } from "./domain/context.js";
import type { FailureLimits } from "./domain/limits.js";
import { type OAuthRuntime, purgeExpiredTokens } from "./domain/oauth/tokens.js";
import { entityIdOf } from "./domain/saml/runtime.js";
import type { SignInSignals } from "./domain/signals.js";
import type { CacheStats } from "./http/metrics.js";
import { type AuthTarget, listenForInvalidations, onAuthInvalidation, TaggedCache } from "./store/auth-cache.js";
import type { Database } from "./store/db.js";
import type { Store } from "./store/index.js";
import type { SamlAppRow } from "./store/saml.js";

export interface OAuthRuntimeDeps {
  config: Config;
  db: Database;
  /** The Store the transports use. */
  store: Store;
  instanceId: string;
  clock: Clock;
  log: Logger;
  limits: FailureLimits;
  signals?: SignInSignals;
}

/** The master key and where it came from (for the message when it does not fit the data). */
async function masterKeyOf(deps: OAuthRuntimeDeps): Promise<{ key: Buffer; whose: string }> {
  const { config, log, store, instanceId } = deps;
  if (config.masterKey) return { key: config.masterKey, whose: "SVC_MASTER_KEY" };
  const sealed = async () => (await store.keys.newest(instanceId)) !== null || (await store.authn.newestTotpSecret(instanceId)) !== null;
  const mk = await embeddedMasterKey(config.dataDir, sealed);
  if (mk.generated)
    log.warn({ file: mk.file }, "SVC_MASTER_KEY is not set: generated a master key for the embedded database; back it up with the data directory");
  return { key: mk.key, whose: mk.file };
}

function samlCertificatesOf(deps: OAuthRuntimeDeps, masterKey: Buffer): SamlCertificates {
  const { config } = deps;
  return new SamlCertificates({
    store: deps.store,
    instanceId: deps.instanceId,
    masterKey,
    rotationSeconds: config.samlCertificateRotationSeconds,
    overlapSeconds: config.samlCertificateOverlapSeconds,
    clock: deps.clock,
    log: deps.log,
    commonName: new URL(config.externalUrl).host,
  });
}

/** The token lifetimes of the configuration, in seconds. */
function lifetimesOf(config: OAuthRuntimeDeps["config"]): OAuthRuntime["lifetimes"] {
  return {
    clientCredentials: config.accessTokenLifetimeClientCredentials,
    jwtProfile: config.accessTokenLifetimeJwtProfile,
    user: config.accessTokenLifetimeUser,
    idToken: config.idTokenLifetime,
    refresh: config.refreshTokenLifetime,
    refreshIdle: config.refreshTokenIdleLifetime,
    refreshReuse: config.refreshTokenReuseInterval,
    authRequest: config.authRequestLifetime,
    authCode: config.authCodeLifetime,
  };
}

/**
 * What signs the outbox's logout messages: the back-channel logout tokens like ID tokens (the application's algorithm,
 * the active key), the SOAP LogoutRequests to SAML SPs with the IdP's entity id and active certificate.
 */
function logoutSignerOf(externalUrl: string, keys: SigningKeys, saml: SamlCertificates): LogoutTokenSigner {
  return {
    issuer: externalUrl,
    sign: (claims, typ, alg) => keys.sign(claims, typ, alg),
    saml: { entityId: entityIdOf(externalUrl), certificate: () => saml.active() },
  };
}

/**
 * The actions' runtime (the functions' calls, and where events go: the event writer asks it) and the outbox's delivery
 * worker (started once the runtime is complete).
 */
function actionsRuntime(deps: OAuthRuntimeDeps, masterKey: Buffer, logoutSigner: LogoutTokenSigner): { actions: ActionRunner; deliveries: DeliveryWorker } {
  const { config, store, log, clock } = deps;
  const actions = new ActionRunner({
    store,
    instanceId: deps.instanceId,
    masterKey,
    log,
    clock,
    signals: deps.signals,
    allowPrivate: config.actionsAllowPrivate,
  });
  actions.maxAttempts = config.actionsDeliveryAttempts;
  store.setOutboxRouter(actions);
  const deliveries = new DeliveryWorker({
    store,
    instanceId: deps.instanceId,
    runner: actions,
    log,
    clock,
    allowPrivate: config.actionsAllowPrivate,
    backoffMs: config.actionsDeliveryBackoffMs,
    retentionMs: config.actionsDeliveryRetentionHours * 3600_000,
    onOutcome: (outcome) => deps.signals?.delivery?.(outcome),
    logoutTokens: logoutSigner,
  });
  return { actions, deliveries };
}

export async function createOAuthRuntime(deps: OAuthRuntimeDeps): Promise<{
  runtime: OAuthRuntime;
  masterKey: Buffer;
  samlCertificates: SamlCertificates;
  /** SAML applications by SP entity id, in front of the store (invalidated with the authentication caches). */
  samlApps: TaggedCache<SamlAppRow>;
  /** Hits and misses of the authentication caches so far, for the metrics. */
  cacheStats(): CacheStats[];
  /** The outbox's waiting deliveries and the age of the oldest, for the metrics. */
  outboxStats(): Promise<{ waiting: number; oldestSeconds: number }>;
  close(): Promise<void>;
}> {
  const { config, db, log, clock } = deps;
  const { store } = deps;
  const masterKey = await masterKeyOf(deps);
  const keys = new SigningKeys({
    store,
    instanceId: deps.instanceId,
    masterKey: masterKey.key,
    rotationSeconds: config.signingKeyRotationSeconds,
    overlapSeconds: config.signingKeyOverlapSeconds,
    clock,
    log,
  });
  await keys.checkMasterKey(masterKey.whose, config.previousMasterKey);
  await checkSealedSecrets({ store, instanceId: deps.instanceId, key: masterKey.key, whose: masterKey.whose, previous: config.previousMasterKey, log });
  const samlCertificates = samlCertificatesOf(deps, masterKey.key);
  const caches = { tokens: new TaggedCache(), clients: new TaggedCache(), machineKeys: new TaggedCache(), roleClaims: new TaggedCache() };
  const samlApps = new TaggedCache<SamlAppRow>();
  const all = [...Object.values(caches), samlApps] as TaggedCache<unknown>[];
  const { actions, deliveries } = actionsRuntime(deps, masterKey.key, logoutSignerOf(config.externalUrl, keys, samlCertificates));
  const rt: OAuthRuntime = {
    store,
    instanceId: deps.instanceId,
    issuer: config.externalUrl,
    keys,
    clock,
    log,
    lifetimes: lifetimesOf(config),
    loginUrl: config.loginUrl,
    loginOrigins: [...new Set([new URL(config.externalUrl).origin, new URL(config.loginUrl).origin, ...config.loginUiAllowedOrigins])],
    limits: deps.limits,
    signals: deps.signals,
    actions,
    ...(caches as Pick<OAuthRuntime, keyof typeof caches>),
  };
  const onTarget = (t: AuthTarget) => {
    if ("keys" in t || "all" in t) {
      keys.invalidate();
      samlCertificates.invalidate();
      actions.invalidate();
    }
    for (const c of all) c.invalidate(t);
  };
  const unsubscribe = onAuthInvalidation(onTarget);
  let listener: { ready: Promise<void>; close(): Promise<void> } | undefined;
  if (db.kind === "postgres" && config.databaseUrl) {
    listener = listenForInvalidations(
      config.databaseUrl,
      log,
      onTarget,
      (up) => {
        for (const c of all) {
          c.enabled = up;
          if (!up) c.clear();
        }
      },
      (payload) => db.notify(payload),
    );
    await listener.ready;
  }
  // The token signing keys (one per algorithm), and the SAML certificate (created at start, once, under its rotation
  // lock, so the metadata is there before the first SP asks): on a first start the keys are generated at once, in the
  // thread pool.
  await Promise.all([keys.ready(), samlCertificates.active()]);
  // Housekeeping: re-read the key set now and then (keys past their verifyUntil leave the JWKS; a
  // rotation due by schedule happens on the next signature), and purge token rows and used-assertion
  // markers an hour after they expired. Every replica may do it; the work is idempotent.
  const housekeeping = setInterval(() => {
    keys.invalidate();
    samlCertificates.invalidate();
    purgeExpiredTokens(rt).catch((err: unknown) => log.warn({ err }, "could not purge expired OAuth tokens"));
  }, 60_000);
  housekeeping.unref();
  deliveries.start();
  return {
    runtime: rt,
    masterKey: masterKey.key,
    samlCertificates,
    samlApps,
    cacheStats: () => [
      { cache: "tokens", hits: caches.tokens.hits, misses: caches.tokens.misses },
      { cache: "clients", hits: caches.clients.hits, misses: caches.clients.misses },
      { cache: "machine_keys", hits: caches.machineKeys.hits, misses: caches.machineKeys.misses },
      { cache: "role_claims", hits: caches.roleClaims.hits, misses: caches.roleClaims.misses },
      { cache: "saml_apps", hits: samlApps.hits, misses: samlApps.misses },
    ],
    outboxStats: () => store.outbox.depth(deps.instanceId, clock()),
    async close() {
      await deliveries.stop();
      clearInterval(housekeeping);
      unsubscribe();
      await listener?.close();
    },
  };
}
