// Settings (policies): one row per kind and owner (the instance default or an organization's override).
import type { Db } from "./index.js";

export interface StoredSettingRow {
  ownerId: string;
  createdAt: Date;
  updatedAt: Date;
}

export class SettingsRepo {
  constructor(private readonly db: Db) {}

  /** The stored values of `kind` of these owners (those that have one), in one query. */
  values(instanceId: string, kind: string, ownerIds: readonly string[]): Promise<{ ownerId: string; value: unknown }[]> {
    return this.db.setting.findMany({ where: { instanceId, kind, ownerId: { in: [...ownerIds] } }, select: { ownerId: true, value: true } });
  }

  /** Every owner's value of `kind` in the instance (the instance default and each organization's override). */
  allOfKind(instanceId: string, kind: string): Promise<{ ownerId: string; value: unknown }[]> {
    return this.db.setting.findMany({ where: { instanceId, kind }, select: { ownerId: true, value: true } });
  }

  /** Creates or replaces the owner's value of `kind`. */
  put(instanceId: string, ownerId: string, kind: string, value: object, now: Date): Promise<StoredSettingRow> {
    return this.db.setting.upsert({
      where: { instanceId_ownerId_kind: { instanceId, ownerId, kind } },
      create: { instanceId, ownerId, kind, value, createdAt: now, updatedAt: now },
      update: { value, updatedAt: now },
      select: { ownerId: true, createdAt: true, updatedAt: true },
    });
  }

  /** Whether the owner had a value of `kind` (now removed). */
  async remove(instanceId: string, ownerId: string, kind: string): Promise<boolean> {
    const { count } = await this.db.setting.deleteMany({ where: { instanceId, ownerId, kind } });
    return count > 0;
  }
}
