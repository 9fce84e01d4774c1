// The SAML identity provider's rows: its signing certificates (the crypto lives in src/crypto/saml-certificates.ts),
// the AuthnRequests waiting for a login UI, and the lookup of a SAML application by its service provider entity id.
import { Prisma } from "../../gen/prisma/client.js";
import { type AppConfig, parseAppConfig } from "../domain/access/app-settings.js";
import { unique } from "./errors.js";
import type { Db } from "./index.js";
import { query, statement } from "./sql.js";

/** Advisory lock key serialising certificate rotations across replicas. */
const CERT_ROTATION_LOCK = 0x737663_05;

export interface SamlCertificateRow {
  id: string;
  certificatePem: string;
  privateKeyEnc: Uint8Array;
  activeFrom: Date;
  verifyUntil: Date | null;
}

/** A SAML application as the SSO endpoint and CreateResponse read it. */
export interface SamlAppRow {
  id: string;
  projectId: string;
  orgId: string;
  active: boolean;
  config: AppConfig;
}

export interface NewSamlRequest {
  id: string;
  instanceId: string;
  appId: string;
  requestId: string;
  issuer: string;
  acsUrl: string;
  binding: string;
  relayState: string | null;
  forceAuthn: boolean;
  isPassive: boolean;
  /** The NameIDPolicy Format asked for (a URI svc gives), or null: the app's. */
  nameIdFormat?: string | null;
  createdAt: Date;
  expiresAt: Date;
}

export interface SamlRequestRow extends NewSamlRequest {
  finishedAt: Date | null;
  app: SamlAppRow;
}

/** An SP a logout still has to tell: what its LogoutRequest names. */
export interface LogoutParticipant {
  appId: string;
  nameId: string;
  nameIdFormat: string | null;
  sessionIndex: string | null;
}

export interface SamlLogoutRow {
  id: string;
  instanceId: string;
  appId: string | null;
  requestId: string | null;
  relayState: string | null;
  returnUrl: string;
  returnBinding: string | null;
  pending: LogoutParticipant[];
  sentId: string | null;
  partial: boolean;
  createdAt: Date;
  expiresAt: Date;
}

const APP_SELECT = { id: true, projectId: true, orgId: true, state: true, config: true } as const;

function appOf(a: { id: string; projectId: string; orgId: string; state: string; config: unknown }): SamlAppRow {
  return { id: a.id, projectId: a.projectId, orgId: a.orgId, active: a.state === "ACTIVE", config: parseAppConfig(a.config) };
}

export class SamlRepo {
  constructor(readonly db: Db) {}

  // ------------------------------------------------------------ certificates

  /** The certificates still listed at `now`, newest first. */
  verifyingCertificates(instanceId: string, now: Date): Promise<SamlCertificateRow[]> {
    return this.db.samlCertificate.findMany({
      where: { instanceId, OR: [{ verifyUntil: null }, { verifyUntil: { gt: now } }] },
      orderBy: { activeFrom: "desc" },
    });
  }

  /** The newest certificate, retired or not: what start-up unseals to check the master key. */
  newestCertificate(instanceId: string): Promise<{ id: string; privateKeyEnc: Uint8Array } | null> {
    return this.db.samlCertificate.findFirst({
      where: { instanceId },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      select: { id: true, privateKeyEnc: true },
    });
  }

  sealedCertificates(instanceId: string): Promise<{ id: string; privateKeyEnc: Uint8Array }[]> {
    return this.db.samlCertificate.findMany({ where: { instanceId }, select: { id: true, privateKeyEnc: true } });
  }

  async resealCertificate(id: string, privateKeyEnc: Uint8Array<ArrayBuffer>): Promise<void> {
    await this.db.samlCertificate.update({ where: { id }, data: { privateKeyEnc } });
  }

  /** Serialises certificate rotations across replicas until the transaction ends (call inside one). */
  async lockRotation(): Promise<void> {
    await this.db.$executeRaw`SELECT pg_advisory_xact_lock(${CERT_ROTATION_LOCK})`;
  }

  async latestCertificateStart(instanceId: string, now: Date): Promise<Date | undefined> {
    const latest = await this.db.samlCertificate.findFirst({
      where: { instanceId, activeFrom: { lte: now } },
      orderBy: { activeFrom: "desc" },
      select: { activeFrom: true },
    });
    return latest?.activeFrom;
  }

  /** Gives every certificate without an end `verifyUntil`. */
  async retireCertificates(instanceId: string, verifyUntil: Date): Promise<void> {
    await this.db.samlCertificate.updateMany({ where: { instanceId, verifyUntil: null }, data: { verifyUntil } });
  }

  async insertCertificate(row: { id: string; instanceId: string; certificatePem: string; privateKeyEnc: Uint8Array<ArrayBuffer>; at: Date }): Promise<void> {
    const { at, ...data } = row;
    await this.db.samlCertificate.create({ data: { ...data, activeFrom: at, createdAt: at } });
  }

  // ------------------------------------------------------------ applications

  /** The SAML application of the instance registered with this service provider entity id. */
  async appByEntityId(instanceId: string, entityId: string): Promise<SamlAppRow | null> {
    // Every AuthnRequest and LogoutRequest starts here: a prepared statement on the driver, not Prisma's runtime.
    const [a] = await query<{ id: string; projectId: string; orgId: string; state: string; config: unknown }>(
      this.db,
      statement(
        Prisma.sql`SELECT "id", "projectId", "orgId", "state"::text AS "state", "config" FROM "Application"
          WHERE "instanceId" = ${instanceId} AND "samlEntityId" = ${entityId} AND "type" = 'SAML'`,
        "saml_app_by_entity_id",
      ),
    );
    return a ? appOf(a) : null;
  }

  /** SAML applications of the instance by id. */
  async appsById(instanceId: string, ids: readonly string[]): Promise<SamlAppRow[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.application.findMany({ where: { instanceId, id: { in: [...ids] }, type: "SAML" }, select: APP_SELECT });
    return rows.map(appOf);
  }

  // ------------------------------------------------------------ requests

  /** Stores a request; a second one with the same AuthnRequest ID from the same SP is refused (`onReplay`). */
  async createRequest(r: NewSamlRequest, onReplay: () => Error): Promise<void> {
    // One prepared INSERT; a row already there (the same AuthnRequest ID from the same SP) inserts nothing.
    const rows = await query<{ n: number }>(
      this.db,
      statement(
        Prisma.sql`INSERT INTO "SamlRequest" ("id", "instanceId", "appId", "requestId", "issuer", "acsUrl", "binding", "relayState",
            "forceAuthn", "isPassive", "nameIdFormat", "createdAt", "expiresAt")
          VALUES (${r.id}, ${r.instanceId}, ${r.appId}, ${r.requestId}, ${r.issuer}, ${r.acsUrl}, ${r.binding}, ${r.relayState},
            ${r.forceAuthn}, ${r.isPassive}, ${r.nameIdFormat ?? null}, ${r.createdAt}::timestamptz, ${r.expiresAt}::timestamptz)
          ON CONFLICT DO NOTHING RETURNING 1 AS "n"`,
        "saml_request_insert",
      ),
    );
    if (rows.length === 0) throw onReplay();
  }

  async findRequest(instanceId: string, id: string): Promise<SamlRequestRow | null> {
    const r = await this.db.samlRequest.findFirst({ where: { id, instanceId }, include: { app: { select: APP_SELECT } } });
    if (!r) return null;
    const { app, ...row } = r;
    return { ...row, app: appOf(app) };
  }

  /** Marks a request answered unless it was (or expired); whether this call did. */
  async finishRequest(instanceId: string, id: string, now: Date): Promise<boolean> {
    const n = await this.db.samlRequest.updateMany({ where: { id, instanceId, finishedAt: null, expiresAt: { gt: now } }, data: { finishedAt: now } });
    return n.count === 1;
  }

  /** Deletes requests (and logouts) that expired before `before`: by then their IssueInstant is outside the window, so no replay gets through. */
  async purgeExpired(instanceId: string, before: Date): Promise<void> {
    await this.db.samlRequest.deleteMany({ where: { instanceId, expiresAt: { lt: before } } });
    await this.db.samlLogout.deleteMany({ where: { instanceId, expiresAt: { lt: before } } });
  }

  // ------------------------------------------------------------ persistent NameIDs

  /** The user's pairwise persistent NameID at the app: the stored one, or `fresh` stored now (first assertion). */
  async persistentId(appId: string, userId: string, fresh: string, at: Date): Promise<string> {
    const row = await this.db.samlPersistentId.upsert({
      where: { appId_userId: { appId, userId } },
      create: { appId, userId, nameId: fresh, createdAt: at },
      update: {},
      select: { nameId: true },
    });
    return row.nameId;
  }

  // ------------------------------------------------------------ single logout

  /** Stores a logout; a second one for the same LogoutRequest ID from the same SP is refused (`onReplay`). */
  async createLogout(l: SamlLogoutRow, onReplay: () => Error): Promise<void> {
    const { pending, ...rest } = l;
    await unique(this.db.samlLogout.create({ data: { ...rest, pending: pending as unknown as Prisma.InputJsonValue } }), onReplay);
  }

  async findLogout(instanceId: string, id: string): Promise<SamlLogoutRow | null> {
    const r = await this.db.samlLogout.findFirst({ where: { id, instanceId } });
    return r && { ...r, pending: r.pending as unknown as LogoutParticipant[] };
  }

  /** Moves a logout on: from `sentId` (the LogoutRequest answered, or null) to the next; false when another call did. */
  async advanceLogout(
    instanceId: string,
    id: string,
    from: string | null,
    next: { pending: LogoutParticipant[]; sentId: string | null; partial: boolean },
  ): Promise<boolean> {
    const n = await this.db.samlLogout.updateMany({
      where: { id, instanceId, sentId: from },
      data: { pending: next.pending as unknown as Prisma.InputJsonValue, sentId: next.sentId, partial: next.partial },
    });
    return n.count === 1;
  }
}
