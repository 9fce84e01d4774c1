// External identity providers, the links of users to their accounts there, and the sign-in intents at them. The
// client secret and the PKCE verifier arrive sealed, the intent token as its SHA-256.
import type { Prisma } from "../../gen/prisma/client.js";
import { alreadyExists } from "../domain/errors.js";
import { unique } from "./errors.js";
import type { Db } from "./index.js";
import { countAndPage, inCreationOrder, type Paged, type Window } from "./paging.js";

export interface IdpRow {
  id: string;
  instanceId: string;
  orgId: string | null;
  /** "oidc" or "saml". */
  type: string;
  name: string;
  issuer: string;
  clientId: string;
  clientSecretEnc: Uint8Array;
  scopes: string[];
  isIdTokenMapping: boolean;
  isLinkingAllowed: boolean;
  isCreationAllowed: boolean;
  isAutoCreation: boolean;
  isAutoUpdate: boolean;
  autoLinking: string;
  claimMapping: unknown;
  /** SAML: the metadata as registered, and what svc read from it (with the provider's settings). */
  samlMetadata: Uint8Array | null;
  saml: unknown;
  createdAt: Date;
  updatedAt: Date;
}

export type IdpChange = Omit<IdpRow, "id" | "instanceId" | "orgId" | "type" | "createdAt" | "clientSecretEnc" | "samlMetadata" | "saml"> & {
  clientSecretEnc?: Uint8Array;
  samlMetadata?: Uint8Array;
  saml?: unknown;
};

export interface IdpLinkRow {
  idpId: string;
  externalUserId: string;
  externalUserName: string;
  userId: string;
  createdAt: Date;
}

export interface IntentRow {
  id: string;
  instanceId: string;
  idpId: string;
  state: string;
  nonce: string;
  codeVerifierEnc: Uint8Array;
  successUrl: string;
  failureUrl: string;
  expiresAt: Date;
  createdAt: Date;
  succeededAt: Date | null;
  failedAt: Date | null;
  error: string | null;
  tokenHash: Uint8Array | null;
  externalUserId: string | null;
  externalUserName: string | null;
  profile: unknown;
  rawClaims: unknown;
  samlRequestId: string | null;
  userId: string | null;
  consumedAt: Date | null;
}

export type NewIntent = Pick<
  IntentRow,
  "id" | "instanceId" | "idpId" | "state" | "nonce" | "codeVerifierEnc" | "successUrl" | "failureUrl" | "expiresAt" | "createdAt"
> & { samlRequestId?: string };

export interface IntentSuccess {
  tokenHash: Uint8Array<ArrayBuffer>;
  externalUserId: string;
  externalUserName: string;
  profile: Record<string, unknown>;
  rawClaims: Record<string, unknown>;
  userId: string | null;
  at: Date;
  /** The answer may be used until then. */
  expiresAt: Date;
}

const bytes = (b: Uint8Array) => new Uint8Array(b) as Uint8Array<ArrayBuffer>;
const json = (v: unknown) => v as Prisma.InputJsonValue;

export class IdpRepo {
  constructor(private readonly db: Db) {}

  // ------------------------------------------------------------ providers

  async insert(row: IdpRow): Promise<void> {
    const { samlMetadata, saml, ...rest } = row;
    await this.db.identityProvider.create({
      data: {
        ...rest,
        clientSecretEnc: bytes(row.clientSecretEnc),
        claimMapping: json(row.claimMapping),
        ...(samlMetadata ? { samlMetadata: bytes(samlMetadata) } : {}),
        ...(saml ? { saml: json(saml) } : {}),
      },
    });
  }

  async update(instanceId: string, id: string, change: IdpChange): Promise<boolean> {
    const { clientSecretEnc, claimMapping, samlMetadata, saml, ...rest } = change;
    const { count } = await this.db.identityProvider.updateMany({
      where: { instanceId, id },
      data: {
        ...rest,
        claimMapping: json(claimMapping),
        ...(clientSecretEnc ? { clientSecretEnc: bytes(clientSecretEnc) } : {}),
        ...(samlMetadata ? { samlMetadata: bytes(samlMetadata) } : {}),
        ...(saml ? { saml: json(saml) } : {}),
      },
    });
    return count > 0;
  }

  find(instanceId: string, id: string): Promise<IdpRow | null> {
    return this.db.identityProvider.findFirst({ where: { instanceId, id } });
  }

  /** Providers of the instance (orgId null) and of the organizations given. */
  async page(instanceId: string, orgIds: string[], w: Window): Promise<Paged<IdpRow>> {
    const where: Prisma.IdentityProviderWhereInput = { instanceId, OR: [{ orgId: null }, ...(orgIds.length ? [{ orgId: { in: orgIds } }] : [])] };
    return countAndPage(
      this.db,
      w,
      (take) => this.db.identityProvider.count({ where, take }),
      this.db.identityProvider.findMany({ where, ...inCreationOrder(w) }),
    );
  }

  /** Deletes the provider; its links and intents go with it (foreign keys). */
  async delete(instanceId: string, id: string): Promise<boolean> {
    const { count } = await this.db.identityProvider.deleteMany({ where: { instanceId, id } });
    return count > 0;
  }

  /** Every provider's sealed client secret: what a master key rotation seals again (SAML providers have none). */
  async sealedSecrets(instanceId: string): Promise<{ id: string; sealed: Uint8Array }[]> {
    const rows = await this.db.identityProvider.findMany({ where: { instanceId, type: "oidc" }, select: { id: true, clientSecretEnc: true } });
    return rows.map((r) => ({ id: r.id, sealed: r.clientSecretEnc }));
  }

  async newestSealedSecret(instanceId: string): Promise<{ id: string; sealed: Uint8Array } | null> {
    const r = await this.db.identityProvider.findFirst({
      where: { instanceId, type: "oidc" },
      orderBy: { createdAt: "desc" },
      select: { id: true, clientSecretEnc: true },
    });
    return r && { id: r.id, sealed: r.clientSecretEnc };
  }

  async resealSecret(id: string, sealed: Uint8Array<ArrayBuffer>): Promise<void> {
    await this.db.identityProvider.update({ where: { id }, data: { clientSecretEnc: sealed } });
  }

  // ------------------------------------------------------------ links

  async linkedUser(instanceId: string, idpId: string, externalUserId: string): Promise<string | null> {
    const row = await this.db.idpLink.findUnique({
      where: { instanceId_idpId_externalUserId: { instanceId, idpId, externalUserId } },
      select: { userId: true },
    });
    return row?.userId ?? null;
  }

  async link(instanceId: string, row: Omit<IdpLinkRow, "createdAt">, at: Date): Promise<void> {
    await unique(this.db.idpLink.create({ data: { instanceId, ...row, createdAt: at } }), () =>
      alreadyExists("Errors.User.IDPLink.AlreadyExists", "this account at the provider is linked to a user already"),
    );
  }

  async links(instanceId: string, userId: string, w: Window): Promise<Paged<IdpLinkRow>> {
    const where = { instanceId, userId };
    const dir = w.asc ? ("asc" as const) : ("desc" as const);
    return countAndPage(
      this.db,
      w,
      (take) => this.db.idpLink.count({ where, take }),
      this.db.idpLink.findMany({
        where,
        orderBy: [{ createdAt: dir }, { externalUserId: dir }],
        skip: w.offset,
        take: w.limit,
        select: { idpId: true, externalUserId: true, externalUserName: true, userId: true, createdAt: true },
      }),
    );
  }

  async unlink(instanceId: string, userId: string, idpId: string, externalUserId: string): Promise<boolean> {
    const { count } = await this.db.idpLink.deleteMany({ where: { instanceId, userId, idpId, externalUserId } });
    return count > 0;
  }

  /** Up to `limit` human users (of `orgId`, or of the instance) whose verified e-mail is `email`. */
  async usersWithVerifiedEmail(instanceId: string, orgId: string | null, email: string, limit: number): Promise<string[]> {
    const rows = await this.db.user.findMany({
      // Exact or lower-cased, so that the (instanceId, email) index serves it; providers send addresses lower-cased.
      where: { instanceId, ...(orgId ? { orgId } : {}), type: "HUMAN", emailVerified: true, email: { in: [...new Set([email, email.toLowerCase()])] } },
      select: { id: true },
      take: limit,
    });
    return rows.map((r) => r.id);
  }

  // ------------------------------------------------------------ intents

  async startIntent(row: NewIntent): Promise<void> {
    await this.db.idpIntent.create({ data: { ...row, codeVerifierEnc: bytes(row.codeVerifierEnc) } });
  }

  intent(instanceId: string, id: string): Promise<IntentRow | null> {
    return this.db.idpIntent.findFirst({ where: { instanceId, id } });
  }

  intentByState(instanceId: string, state: string): Promise<IntentRow | null> {
    return this.db.idpIntent.findFirst({ where: { instanceId, state } });
  }

  /** Records the provider's answer on a pending intent; false when it was not pending (a replayed callback). */
  async succeedIntent(id: string, s: IntentSuccess): Promise<boolean> {
    const { count } = await this.db.idpIntent.updateMany({
      where: { id, succeededAt: null, failedAt: null },
      data: {
        succeededAt: s.at,
        expiresAt: s.expiresAt,
        tokenHash: s.tokenHash,
        externalUserId: s.externalUserId,
        externalUserName: s.externalUserName,
        profile: json(s.profile),
        rawClaims: json(s.rawClaims),
        userId: s.userId,
      },
    });
    return count > 0;
  }

  async failIntent(id: string, error: string, at: Date): Promise<void> {
    await this.db.idpIntent.updateMany({ where: { id, succeededAt: null, failedAt: null }, data: { failedAt: at, error } });
  }

  /** Spends a succeeded intent once (a session check); false when it was spent already or expired. */
  async consumeIntent(id: string, now: Date): Promise<boolean> {
    const { count } = await this.db.idpIntent.updateMany({
      where: { id, succeededAt: { not: null }, consumedAt: null, expiresAt: { gt: now } },
      data: { consumedAt: now },
    });
    return count > 0;
  }

  async purgeExpired(instanceId: string, before: Date): Promise<void> {
    await this.db.idpIntent.deleteMany({ where: { instanceId, expiresAt: { lt: before } } });
  }
}
