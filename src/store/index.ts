// The store: one repository per aggregate over one Prisma client (PostgreSQL
// through @prisma/adapter-pg, or embedded PGlite), and the transaction runner.
// The domain gets a Store through its context and never sees Prisma, pg or the
// file system; a Store made by `transaction` runs every repository call on the
// transaction's connection.
import type { Prisma, PrismaClient } from "../../gen/prisma/client.js";
import { ActionRepo } from "./actions.js";
import { AppRepo } from "./apps.js";
import { AuthRequestRepo } from "./auth-requests.js";
import { AuthnRepo } from "./authn.js";
import { ConsentRepo } from "./consents.js";
import { CredentialRepo } from "./credentials.js";
import { databaseTimeLeft, databaseTimeUp } from "./deadline.js";
import { DeviceAuthorizationRepo } from "./device-authorizations.js";
import { translateDriverError } from "./errors.js";
import { EventRepo } from "./events.js";
import { UserGrantRepo } from "./grants.js";
import { IdempotencyRepo } from "./idempotency.js";
import { IdpRepo } from "./idps.js";
import { InvalidationRepo } from "./invalidation.js";
import { SigningKeyRepo } from "./keys.js";
import { LogoutDeliveryRepo } from "./logout-deliveries.js";
import { MemberRepo } from "./members.js";
import { OrgRepo } from "./orgs.js";
import { OutboxRepo, type OutboxRouter } from "./outbox.js";
import { ProjectRepo } from "./projects.js";
import { RefreshTokenRepo } from "./refresh-tokens.js";
import { SamlRepo } from "./saml.js";
import { SamlSignInRepo } from "./saml-sign-in.js";
import { ScimRecordRepo } from "./scim-records.js";
import { SessionRepo } from "./sessions.js";
import { SettingsRepo } from "./settings.js";
import { TokenRepo } from "./tokens.js";
import { UserQueryRepo } from "./user-query.js";
import { UserRepo } from "./users.js";

/** The root client or an interactive transaction's client. */
export type Db = PrismaClient | Prisma.TransactionClient;

export interface TransactionOptions {
  /** Milliseconds the transaction may run (Prisma's default is 5 s). */
  timeout?: number;
  /** Milliseconds to wait for a connection. */
  maxWait?: number;
}

export class Store {
  #users?: UserRepo;
  #credentials?: CredentialRepo;
  #orgs?: OrgRepo;
  #members?: MemberRepo;
  #settings?: SettingsRepo;
  #projects?: ProjectRepo;
  #grants?: UserGrantRepo;
  #apps?: AppRepo;
  #tokens?: TokenRepo;
  #keys?: SigningKeyRepo;
  #events?: EventRepo;
  #auth?: InvalidationRepo;
  #userQueries?: UserQueryRepo;
  #scimRecords?: ScimRecordRepo;
  #authn?: AuthnRepo;
  #authRequests?: AuthRequestRepo;
  #deviceAuthorizations?: DeviceAuthorizationRepo;
  #samlSignIn?: SamlSignInRepo;
  #refreshTokens?: RefreshTokenRepo;
  #sessions?: SessionRepo;
  #idps?: IdpRepo;
  #actions?: ActionRepo;
  #saml?: SamlRepo;
  #consents?: ConsentRepo;
  #idempotency?: IdempotencyRepo;
  #outbox?: OutboxRepo;
  #logoutDeliveries?: LogoutDeliveryRepo;
  /** Where the event writer sends events besides the trail (setOutboxRouter). */
  #router?: OutboxRouter;

  /** The client repositories run on: the root client, or the transaction's (never handed to the domain). */
  readonly #db: Db;

  constructor(
    private readonly root: PrismaClient,
    db: Db = root,
    readonly inTransaction = false,
    router?: OutboxRouter,
  ) {
    this.#db = db;
    this.#router = router;
  }

  /** The actions' runtime, which names the targets an event is delivered to (the composition root sets it once). */
  setOutboxRouter(router: OutboxRouter): void {
    this.#router = router;
    this.#events = undefined;
    this.#users = undefined;
    this.#sessions = undefined;
    this.#authRequests = undefined;
  }

  get users() {
    this.#users ??= new UserRepo(this.#db, this.#router);
    return this.#users;
  }
  /** The user query compiler's reads: v2 ListUsers and the SCIM list. */
  get userQueries() {
    this.#userQueries ??= new UserQueryRepo(this.#db);
    return this.#userQueries;
  }
  /** SCIM's full user resources. */
  get scimRecords() {
    this.#scimRecords ??= new ScimRecordRepo(this.#db);
    return this.#scimRecords;
  }
  get credentials() {
    this.#credentials ??= new CredentialRepo(this.#db);
    return this.#credentials;
  }
  get orgs() {
    this.#orgs ??= new OrgRepo(this.#db);
    return this.#orgs;
  }
  get members() {
    this.#members ??= new MemberRepo(this.#db);
    return this.#members;
  }
  get settings() {
    this.#settings ??= new SettingsRepo(this.#db);
    return this.#settings;
  }
  get projects() {
    this.#projects ??= new ProjectRepo(this.#db);
    return this.#projects;
  }
  get grants() {
    this.#grants ??= new UserGrantRepo(this.#db);
    return this.#grants;
  }
  get apps() {
    this.#apps ??= new AppRepo(this.#db);
    return this.#apps;
  }
  /** Sign-in sessions. */
  get sessions() {
    this.#sessions ??= new SessionRepo(this.#db, this.#router);
    return this.#sessions;
  }
  /** External identity providers, users' links to them, and sign-in intents. */
  get idps() {
    this.#idps ??= new IdpRepo(this.#db);
    return this.#idps;
  }
  /** What users allowed OIDC applications. */
  get consents() {
    this.#consents ??= new ConsentRepo(this.#db);
    return this.#consents;
  }
  /** The answers of creates sent with an Idempotency-Key. */
  get idempotency() {
    this.#idempotency ??= new IdempotencyRepo(this.#db);
    return this.#idempotency;
  }
  /** Actions: targets and executions. */
  get actions() {
    this.#actions ??= new ActionRepo(this.#db);
    return this.#actions;
  }
  /** The SAML identity provider's certificates and pending AuthnRequests. */
  get saml() {
    this.#saml ??= new SamlRepo(this.#db);
    return this.#saml;
  }
  /** SAML's sign-in hot path: CreateResponse's one read and its one write. */
  get samlSignIn() {
    this.#samlSignIn ??= new SamlSignInRepo(this.#db, this.#router);
    return this.#samlSignIn;
  }
  get tokens() {
    this.#tokens ??= new TokenRepo(this.#db);
    return this.#tokens;
  }
  /** Authorization requests of the code flow and their codes. */
  get authRequests() {
    this.#authRequests ??= new AuthRequestRepo(this.#db, this.#router);
    return this.#authRequests;
  }
  /** Device authorizations (RFC 8628) and their polls. */
  get deviceAuthorizations() {
    this.#deviceAuthorizations ??= new DeviceAuthorizationRepo(this.#db);
    return this.#deviceAuthorizations;
  }
  get refreshTokens() {
    this.#refreshTokens ??= new RefreshTokenRepo(this.#db);
    return this.#refreshTokens;
  }
  get keys() {
    this.#keys ??= new SigningKeyRepo(this.#db);
    return this.#keys;
  }
  get events() {
    this.#events ??= new EventRepo(this.#db, this.#router);
    return this.#events;
  }
  /** The outbox: deliveries of events to action targets. */
  get outbox() {
    this.#outbox ??= new OutboxRepo(this.#db);
    return this.#outbox;
  }
  /** OIDC back-channel logout tokens queued in the outbox when sessions end. */
  get logoutDeliveries() {
    this.#logoutDeliveries ??= new LogoutDeliveryRepo(this.#db);
    return this.#logoutDeliveries;
  }
  /** Users' authentication methods: TOTP, passkeys, one-time codes, password history. */
  get authn() {
    this.#authn ??= new AuthnRepo(this.#db);
    return this.#authn;
  }
  /** Invalidation of what authentication caches (in this process and, on commit, in every replica). */
  get auth() {
    this.#auth ??= new InvalidationRepo(this.#db);
    return this.#auth;
  }

  /**
   * Runs `fn` in one transaction: every repository of the Store it is given writes on the same connection and
   * nothing is kept unless `fn` resolves. Inside a transaction, `fn` joins it.
   */
  async transaction<T>(fn: (tx: Store) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    if (this.inTransaction) return fn(this);
    try {
      return await this.root.$transaction((tx) => fn(new Store(this.root, tx, true, this.#router)), withinBudget(opts));
    } catch (err) {
      throw translateDriverError(err);
    }
  }
}

/** Prisma's defaults: the wait for a transaction to start, and how long it may run. */
const PRISMA_MAX_WAIT_MS = 2_000;
const PRISMA_TIMEOUT_MS = 5_000;

/**
 * A transaction of a request neither waits to start nor runs past the request's database budget
 * (src/store/deadline.ts): on the embedded database, whose transactions queue one behind the other, this is the bound
 * (Prisma's P2028, answered 503); on PostgreSQL each statement is bounded by it too.
 */
function withinBudget(opts: TransactionOptions): TransactionOptions {
  const left = databaseTimeLeft();
  if (left === undefined) return opts;
  if (left <= 0) throw databaseTimeUp("a transaction was not started");
  return {
    ...opts,
    maxWait: Math.max(1, Math.floor(Math.min(opts.maxWait ?? PRISMA_MAX_WAIT_MS, left))),
    timeout: Math.max(1, Math.floor(Math.min(opts.timeout ?? PRISMA_TIMEOUT_MS, left))),
  };
}

export function createStore(prisma: PrismaClient): Store {
  return new Store(prisma);
}
