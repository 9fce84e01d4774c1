// Machine credentials: personal access tokens, machine keys, client secrets.
// Lists show what a credential is, never the key, token or secret itself.

import { Prisma } from "../../gen/prisma/client.js";
import type { ListTotal, Page } from "../domain/list.js";
import type { Db } from "./index.js";
import { dateOf, pageOnDriver } from "./paging.js";

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

  /**
   * The total (bounded, see Page) and one page of machine keys or PATs, in creation order (newest first unless `asc`,
   * the id breaking ties), each with its user's organization: one statement on the driver (pageOnDriver).
   */
  async page(kind: "machineKey" | "pat", scope: CredentialScope, p: Page): Promise<ListTotal & { credentials: CredentialView[] }> {
    const where = [Prisma.sql`c."instanceId" = ${scope.instanceId}`];
    if (scope.userId !== undefined) where.push(Prisma.sql`c."userId" = ${scope.userId}`);
    if (scope.orgIds) where.push(Prisma.sql`EXISTS (SELECT 1 FROM "User" su WHERE su."id" = c."userId" AND su."orgId" = ANY(${scope.orgIds}::text[]))`);
    const shape = `${scope.userId !== undefined ? "u" : ""}${scope.orgIds ? "o" : ""}`;
    const { rows, ...total } = await pageOnDriver<Omit<CredentialView, "createdAt" | "expiresAt"> & { createdAt: unknown; expiresAt: unknown }>(
      this.db,
      {
        from: Prisma.raw(kind === "machineKey" ? '"MachineKey" c' : '"PersonalAccessToken" c'),
        alias: "c",
        join: Prisma.sql`JOIN "User" u ON u."id" = c."userId"`,
        where: Prisma.join(where, " AND "),
        columns: Prisma.sql`c."id", c."userId", u."orgId", c."createdAt", c."expiresAt"`,
        order: ["createdAt", "id"],
        name: `${kind === "machineKey" ? "machine_key" : "pat"}_list_${shape || "all"}`,
      },
      p,
    );
    return {
      ...total,
      credentials: rows.map((r) => ({ ...r, createdAt: dateOf(r.createdAt), expiresAt: r.expiresAt === null ? null : dateOf(r.expiresAt) })),
    };
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
