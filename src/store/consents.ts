// What users allowed OIDC applications (UserConsent): one row per user and application, its scopes.
import type { Db } from "./index.js";

export interface ConsentRow {
  id: string;
  appId: string;
  clientId: string;
  appName: string;
  scopes: string[];
  createdAt: Date;
  updatedAt: Date;
}

const SELECT = { id: true, appId: true, clientId: true, scopes: true, createdAt: true, updatedAt: true, app: { select: { name: true } } } as const;

export class ConsentRepo {
  constructor(readonly db: Db) {}

  async find(userId: string, appId: string): Promise<ConsentRow | null> {
    const row = await this.db.userConsent.findUnique({ where: { userId_appId: { userId, appId } }, select: SELECT });
    return row ? { ...row, appName: row.app.name } : null;
  }

  /** The user's consents, newest first (a handful per user). */
  async ofUser(instanceId: string, userId: string, limit: number): Promise<ConsentRow[]> {
    const rows = await this.db.userConsent.findMany({ where: { instanceId, userId }, orderBy: { updatedAt: "desc" }, take: limit, select: SELECT });
    return rows.map((r) => ({ ...r, appName: r.app.name }));
  }

  /** Records the scopes (added to those allowed before). */
  async upsert(c: { id: string; instanceId: string; userId: string; appId: string; clientId: string; scopes: string[] }, at: Date): Promise<void> {
    const before = await this.db.userConsent.findUnique({ where: { userId_appId: { userId: c.userId, appId: c.appId } }, select: { scopes: true } });
    const scopes = [...new Set([...(before?.scopes ?? []), ...c.scopes])];
    await this.db.userConsent.upsert({
      where: { userId_appId: { userId: c.userId, appId: c.appId } },
      create: { ...c, scopes, createdAt: at, updatedAt: at },
      update: { scopes, updatedAt: at },
    });
  }

  /** The name of an application of the instance (what the consent page shows). */
  async appName(instanceId: string, appId: string): Promise<string | null> {
    return (await this.db.application.findFirst({ where: { id: appId, instanceId }, select: { name: true } }))?.name ?? null;
  }

  /** Removes the consent; false when there was none. */
  async remove(userId: string, appId: string): Promise<boolean> {
    return (await this.db.userConsent.deleteMany({ where: { userId, appId } })).count > 0;
  }
}
