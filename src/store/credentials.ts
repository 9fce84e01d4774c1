// Machine credentials: personal access tokens, machine keys, client secrets.
// Lists show what a credential is, never the key, token or secret itself.
import type { ListTotal, Page } from "../domain/list.js";
import type { Db } from "./index.js";
import { countAndPage, inCreationOrder } from "./paging.js";

export interface CredentialView {
  id: string;
  userId: string;
  orgId: string;
  createdAt: Date;
  expiresAt: Date | null;
}

/** Whose credentials a list shows: one user's, or those of every user of some organizations (none: the instance). */
export interface CredentialScope {
  instanceId: string;
  userId?: string;
  orgIds?: string[];
}

const CREDENTIAL_SELECT = { id: true, userId: true, createdAt: true, expiresAt: true, user: { select: { orgId: true } } } as const;

export class CredentialRepo {
  constructor(readonly db: Db) {}

  async addMachineKey(k: { id: string; instanceId: string; userId: string; publicKey: string; expiresAt: Date | null; createdAt: Date }): Promise<void> {
    await this.db.machineKey.create({ data: k });
  }

  /** False when the user has no such key. */
  async removeMachineKey(userId: string, id: string): Promise<boolean> {
    const { count } = await this.db.machineKey.deleteMany({ where: { id, userId } });
    return count > 0;
  }

  async addPat(t: {
    id: string;
    instanceId: string;
    userId: string;
    tokenHash: Uint8Array<ArrayBuffer>;
    expiresAt: Date | null;
    createdAt: Date;
  }): Promise<void> {
    await this.db.personalAccessToken.create({ data: t });
  }

  /** False when the user has no such token. */
  /** Removes every PAT of a user, or of every user of an organization; returns how many. */
  async removeAllPats(owner: { userId: string } | { orgId: string }): Promise<number> {
    const where = "userId" in owner ? { userId: owner.userId } : { user: { orgId: owner.orgId } };
    const { count } = await this.db.personalAccessToken.deleteMany({ where });
    return count;
  }

  async removePat(userId: string, id: string): Promise<boolean> {
    const { count } = await this.db.personalAccessToken.deleteMany({ where: { id, userId } });
    return count > 0;
  }

  /** The total and one page of machine keys or PATs, in creation order (newest first unless `asc`). */
  async page(kind: "machineKey" | "pat", scope: CredentialScope, p: Page): Promise<ListTotal & { credentials: CredentialView[] }> {
    const where = {
      instanceId: scope.instanceId,
      ...(scope.userId !== undefined ? { userId: scope.userId } : {}),
      ...(scope.orgIds ? { user: { orgId: { in: scope.orgIds } } } : {}),
    };
    const window = { where, ...inCreationOrder(p), select: CREDENTIAL_SELECT };
    const { rows, ...total } =
      kind === "machineKey"
        ? await countAndPage(this.db, p, (take) => this.db.machineKey.count({ where, take }), this.db.machineKey.findMany(window))
        : await countAndPage(this.db, p, (take) => this.db.personalAccessToken.count({ where, take }), this.db.personalAccessToken.findMany(window));
    return { ...total, credentials: rows.map(({ user, ...c }) => ({ ...c, orgId: user.orgId })) };
  }

  /** When the machine user's client secret was created; null when it has none. */
  async secretCreatedAt(userId: string): Promise<Date | null> {
    const row = await this.db.user.findUniqueOrThrow({ where: { id: userId }, select: { secretCreatedAt: true } });
    return row.secretCreatedAt;
  }

  async setSecret(userId: string, secretHash: Uint8Array<ArrayBuffer>, now: Date): Promise<void> {
    await this.db.user.update({ where: { id: userId }, data: { secretHash, secretCreatedAt: now, updatedAt: now } });
  }

  /** False when the user had no secret. */
  async removeSecret(userId: string, now: Date): Promise<boolean> {
    const { count } = await this.db.user.updateMany({
      where: { id: userId, secretHash: { not: null } },
      data: { secretHash: null, secretCreatedAt: null, updatedAt: now },
    });
    return count > 0;
  }
}
