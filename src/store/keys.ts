// Signing keys (rows only; the crypto lives in src/crypto).
import type { Db } from "./index.js";

/** Advisory lock key serialising rotations across replicas. */
const ROTATION_LOCK = 0x737663_02;

export interface SigningKeyRow {
  id: string;
  alg: string;
  privateKeyEnc: Uint8Array;
  activeFrom: Date;
  verifyUntil: Date | null;
}

export interface SigningKeyMeta {
  id: string;
  alg: string;
  activeFrom: Date;
  verifyUntil: Date | null;
  createdAt: Date;
}

export class SigningKeyRepo {
  constructor(readonly db: Db) {}

  /** The keys still verifying at `now`, newest first. */
  verifying(instanceId: string, now: Date): Promise<SigningKeyRow[]> {
    return this.db.signingKey.findMany({
      where: { instanceId, OR: [{ verifyUntil: null }, { verifyUntil: { gt: now } }] },
      orderBy: { activeFrom: "desc" },
    });
  }

  /** Until when each key still verifying at `at` verifies (null: the active one), soonest first, with its algorithm. */
  verifyingUntil(instanceId: string, at: Date): Promise<{ alg: string; verifyUntil: Date | null }[]> {
    return this.db.signingKey.findMany({
      where: { instanceId, OR: [{ verifyUntil: null }, { verifyUntil: { gt: at } }] },
      select: { alg: true, verifyUntil: true },
      orderBy: { verifyUntil: "asc" },
    });
  }

  /** The newest key of the instance, retired or not: what start-up unseals to check the master key. */
  newest(instanceId: string): Promise<{ id: string; privateKeyEnc: Uint8Array } | null> {
    return this.db.signingKey.findFirst({
      where: { instanceId },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      select: { id: true, privateKeyEnc: true },
    });
  }

  /** Every key of the instance with its sealed private part (re-sealing under a new master key). */
  sealed(instanceId: string): Promise<{ id: string; privateKeyEnc: Uint8Array }[]> {
    return this.db.signingKey.findMany({ where: { instanceId }, select: { id: true, privateKeyEnc: true } });
  }

  async reseal(id: string, privateKeyEnc: Uint8Array<ArrayBuffer>): Promise<void> {
    await this.db.signingKey.update({ where: { id }, data: { privateKeyEnc } });
  }

  /** Every key of the instance, newest first: metadata only. */
  list(instanceId: string): Promise<SigningKeyMeta[]> {
    return this.db.signingKey.findMany({
      where: { instanceId },
      orderBy: [{ activeFrom: "desc" }, { id: "desc" }],
      select: { id: true, alg: true, activeFrom: true, verifyUntil: true, createdAt: true },
    });
  }

  /** Serialises rotations across replicas until the transaction ends (call inside one). */
  async lockRotation(): Promise<void> {
    await this.db.$executeRaw`SELECT pg_advisory_xact_lock(${ROTATION_LOCK})`;
  }

  /** When the newest key of `alg` already started became active. */
  async latestActiveFrom(instanceId: string, now: Date, alg: string): Promise<Date | undefined> {
    const latest = await this.db.signingKey.findFirst({
      where: { instanceId, alg, activeFrom: { lte: now } },
      orderBy: { activeFrom: "desc" },
      select: { activeFrom: true },
    });
    return latest?.activeFrom;
  }

  /** Gives every key of `algs` without an end `verifyUntil`; returns their ids. */
  async retireActive(instanceId: string, verifyUntil: Date, algs: readonly string[]): Promise<string[]> {
    const superseded = await this.db.signingKey.findMany({ where: { instanceId, alg: { in: [...algs] }, verifyUntil: null }, select: { id: true } });
    await this.db.signingKey.updateMany({ where: { id: { in: superseded.map((k) => k.id) } }, data: { verifyUntil } });
    return superseded.map((k) => k.id);
  }

  async insert(row: {
    id: string;
    instanceId: string;
    alg: string;
    publicJwk: Record<string, string>;
    privateKeyEnc: Uint8Array<ArrayBuffer>;
    at: Date;
  }): Promise<void> {
    const { at, ...data } = row;
    await this.db.signingKey.create({ data: { ...data, activeFrom: at, createdAt: at } });
  }

  /** Tells every replica (on commit) to reload its key set. */
  async announceRotation(): Promise<void> {
    await this.db.$executeRaw`SELECT pg_notify('svc_auth', ${JSON.stringify({ keys: true })})`;
  }
}
