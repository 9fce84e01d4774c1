// The instance's token-signing keys (RS256). Stored in SigningKey with the
// private part sealed by the master key, so every replica signs and verifies
// with the same keys. Keys are imported once into KeyObjects and kept in
// memory; the set is reloaded when another replica rotates (auth-cache
// notifications) or when a token names a kid we have not seen yet.
//
// Rotation: the newest key whose activeFrom has passed signs. A rotation
// inserts a fresh key active now and gives the previous ones a verifyUntil of
// now + overlap (at least the longest token lifetime), so nothing issued
// before becomes unverifiable. JWKS lists every key not past its verifyUntil.
import { createPrivateKey, createPublicKey, generateKeyPair, type JsonWebKey, type KeyObject, sign } from "node:crypto";
import { promisify } from "node:util";
import type { Logger } from "pino";
import { newId } from "../domain/ids.js";
import type { Store } from "../store/index.js";
import { seal, unseal } from "./secretbox.js";

const generateKeyPairAsync = promisify(generateKeyPair);
/** A token naming an unknown kid reloads the key set at most this often. */
const UNKNOWN_KID_RELOAD_MS = 2_000;

interface LoadedKey {
  id: string;
  activeFrom: number;
  verifyUntil: number | null;
  privateKey: KeyObject;
  publicKey: KeyObject;
  jwk: JsonWebKey;
}

export interface Rotation {
  id: string;
  alg: string;
  createdAt: Date;
  /** The keys this rotation moved to verify-only. */
  retiredKeyIds: string[];
  /** Until when they verify. */
  verifyUntil: Date;
}

export type SigningKeyState = "ACTIVE" | "RETIRED" | "EXPIRED" | "PENDING";

export interface SigningKeyInfo {
  id: string;
  alg: string;
  state: SigningKeyState;
  createdAt: Date;
  activeFrom: Date;
  verifyUntil: Date | null;
}

export interface SigningKeyOptions {
  /** Reads and writes the SigningKey rows (this class keeps only the crypto and the in-memory set). */
  store: Store;
  instanceId: string;
  masterKey: Buffer;
  rotationSeconds: number;
  overlapSeconds: number;
  clock: () => Date;
  log: Logger;
}

const b64url = (data: Buffer | string) => Buffer.from(data).toString("base64url");

export class SigningKeys {
  private keys: LoadedKey[] = [];
  private jwksBody = '{"keys":[]}';
  private loading: Promise<void> | undefined;
  private lastUnknownKidReload = 0;
  private stale = true;

  constructor(private readonly o: SigningKeyOptions) {}

  private aad(id: string): string {
    return `svc:signing-key:${this.o.instanceId}:${id}`;
  }

  /**
   * Whether the master key opens what this database holds (its newest sealed key): a wrong key would otherwise
   * surface as a decryption failure in the first request that signs. With `previous` (SVC_MASTER_KEY_PREVIOUS),
   * every key it sealed is sealed again with the master key first, in one transaction under the rotation lock, so
   * replicas starting together re-seal once. `whose` names where the key came from in the message.
   */
  async checkMasterKey(whose: string, previous?: Buffer): Promise<void> {
    if (previous) await this.resealFrom(previous);
    const row = await this.o.store.keys.newest(this.o.instanceId);
    if (row && !this.opens(this.o.masterKey, row)) {
      throw new Error(
        `${whose} does not open the keys this database holds (signing key ${row.id} was sealed with another master key). ` +
          "Start with the master key this database was created with (kept with its backups); to replace it, see the README, Master key.",
      );
    }
  }

  private opens(key: Buffer, row: { id: string; privateKeyEnc: Uint8Array }): boolean {
    try {
      unseal(key, row.privateKeyEnc, this.aad(row.id));
      return true;
    } catch {
      return false;
    }
  }

  private async resealFrom(previous: Buffer): Promise<void> {
    // A previous key that cannot re-seal anything is a mistake worth a word at start (issue 25, finding 10): the same
    // key twice, or a key this database never used (a typo, the wrong file), or one whose rotation is done.
    if (previous.equals(this.o.masterKey)) {
      this.o.log.warn("SVC_MASTER_KEY_PREVIOUS is the same key as SVC_MASTER_KEY: it re-seals nothing; remove it");
      return;
    }
    const resealed = await this.o.store.transaction(async (tx) => {
      await tx.keys.lockRotation();
      let n = 0;
      for (const row of await tx.keys.sealed(this.o.instanceId)) {
        if (this.opens(this.o.masterKey, row)) continue;
        if (!this.opens(previous, row)) {
          throw new Error(`neither SVC_MASTER_KEY nor SVC_MASTER_KEY_PREVIOUS opens signing key ${row.id}: nothing was re-sealed`);
        }
        const der = unseal(previous, row.privateKeyEnc, this.aad(row.id));
        await tx.keys.reseal(row.id, seal(this.o.masterKey, der, this.aad(row.id)));
        n++;
      }
      return n;
    });
    if (resealed > 0) this.o.log.warn({ resealed }, "sealed the signing keys again with the new SVC_MASTER_KEY: SVC_MASTER_KEY_PREVIOUS may now be removed");
    else {
      this.o.log.warn(
        "SVC_MASTER_KEY_PREVIOUS opens none of the signing keys (each is sealed with SVC_MASTER_KEY already): nothing was re-sealed; " +
          "if a rotation is done, remove it, else check that it is the key the database was sealed with",
      );
    }
  }

  /** Marks the in-memory set as outdated (another replica rotated). */
  invalidate(): void {
    this.stale = true;
  }

  async load(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const now = this.o.clock();
        const rows = await this.o.store.keys.verifying(this.o.instanceId, now);
        const known = new Map(this.keys.map((k) => [k.id, k]));
        const next: LoadedKey[] = [];
        for (const row of rows) {
          const have = known.get(row.id);
          if (have) {
            next.push({ ...have, verifyUntil: row.verifyUntil?.getTime() ?? null });
            continue;
          }
          const der = unseal(this.o.masterKey, row.privateKeyEnc, this.aad(row.id));
          const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
          const publicKey = createPublicKey(privateKey);
          const jwk = { ...(publicKey.export({ format: "jwk" }) as JsonWebKey), kid: row.id, use: "sig", alg: row.alg };
          next.push({ id: row.id, activeFrom: row.activeFrom.getTime(), verifyUntil: row.verifyUntil?.getTime() ?? null, privateKey, publicKey, jwk });
        }
        this.keys = next;
        this.jwksBody = JSON.stringify({ keys: next.map((k) => k.jwk) });
        this.stale = false;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  private current(now: number): LoadedKey | undefined {
    return this.keys.find((k) => k.activeFrom <= now);
  }

  /** The key that signs now, rotating first when it is due (or there is none). */
  async active(): Promise<LoadedKey> {
    if (this.stale) await this.load();
    const now = this.o.clock().getTime();
    const key = this.current(now);
    if (key && now - key.activeFrom < this.o.rotationSeconds * 1000) return key;
    await this.rotate(false);
    const after = this.current(this.o.clock().getTime());
    if (!after) throw new Error("no signing key after rotation");
    return after;
  }

  /**
   * Inserts a new signing key (when `force`, or when none is active or the
   * active one is due). Serialised across replicas; returns whether it rotated.
   */
  async rotate(force: boolean): Promise<boolean> {
    return (await this.insert(force)) !== undefined;
  }

  /**
   * Forces a new active key now and returns it. `inTx` runs inside the
   * rotation's transaction (the audit event commits with the rotation or not at all).
   */
  async rotateNow(inTx?: (tx: Store, rotation: Rotation) => Promise<void>): Promise<Rotation> {
    const rotation = await this.insert(true, inTx);
    if (!rotation) throw new Error("forced rotation did not rotate");
    return rotation;
  }

  private async insert(force: boolean, inTx?: (tx: Store, rotation: Rotation) => Promise<void>): Promise<Rotation | undefined> {
    const { publicKey: _p, privateKey } = await generateKeyPairAsync("rsa", { modulusLength: 2048 });
    const der = privateKey.export({ format: "der", type: "pkcs8" });
    const publicJwk = createPublicKey(privateKey).export({ format: "jwk" }) as JsonWebKey;
    const { instanceId } = this.o;
    const rotation = await this.o.store.transaction(async (tx) => {
      await tx.keys.lockRotation();
      const now = this.o.clock();
      const latest = await tx.keys.latestActiveFrom(instanceId, now);
      if (!force && latest && now.getTime() - latest.getTime() < this.o.rotationSeconds * 1000) return undefined;
      const id = newId();
      const verifyUntil = new Date(now.getTime() + this.o.overlapSeconds * 1000);
      const retiredKeyIds = await tx.keys.retireActive(instanceId, verifyUntil);
      await tx.keys.insert({
        id,
        instanceId,
        alg: "RS256",
        publicJwk: { kty: publicJwk.kty, n: publicJwk.n, e: publicJwk.e },
        privateKeyEnc: seal(this.o.masterKey, der, this.aad(id)),
        at: now,
      });
      const done: Rotation = { id, alg: "RS256", createdAt: now, retiredKeyIds, verifyUntil };
      if (inTx) await inTx(tx, done);
      await tx.keys.announceRotation();
      return done;
    });
    if (rotation) this.o.log.info({ keyId: rotation.id }, "signing key rotated");
    await this.load();
    return rotation;
  }

  /** The instance's keys in all of `states` (newest first unless `asc`): public metadata only, with their state now. */
  async list(input: { offset: number; limit: number; asc: boolean; states: readonly SigningKeyState[] }): Promise<{ total: number; keys: SigningKeyInfo[] }> {
    const rows = await this.o.store.keys.list(this.o.instanceId);
    // The state depends on the neighbours (the newest started key is the active one), so it is
    // decided over the whole set; an instance holds a handful of keys.
    const now = this.o.clock().getTime();
    let activeSeen = false;
    let keys: SigningKeyInfo[] = rows.map((r) => {
      let state: SigningKeyState;
      if (r.activeFrom.getTime() > now) state = "PENDING";
      else if (r.verifyUntil && r.verifyUntil.getTime() <= now) state = "EXPIRED";
      else if (!activeSeen) state = "ACTIVE";
      else state = "RETIRED";
      if (state === "ACTIVE") activeSeen = true;
      return { id: r.id, alg: r.alg, state, createdAt: r.createdAt, activeFrom: r.activeFrom, verifyUntil: r.verifyUntil };
    });
    keys = keys.filter((k) => input.states.every((s) => k.state === s));
    if (input.asc) keys.reverse();
    return { total: keys.length, keys: keys.slice(input.offset, input.offset + input.limit) };
  }

  /** JWKS document (cached string). */
  async jwks(): Promise<string> {
    if (this.stale) await this.load();
    return this.jwksBody;
  }

  /** The public key for a kid, or undefined (unknown, or past its verifyUntil). */
  async publicKey(kid: string): Promise<KeyObject | undefined> {
    if (this.stale) await this.load();
    let key = this.keys.find((k) => k.id === kid);
    const nowMs = Date.now();
    if (!key && nowMs - this.lastUnknownKidReload > UNKNOWN_KID_RELOAD_MS) {
      this.lastUnknownKidReload = nowMs;
      await this.load();
      key = this.keys.find((k) => k.id === kid);
    }
    if (!key) return undefined;
    if (key.verifyUntil !== null && key.verifyUntil <= this.o.clock().getTime()) return undefined;
    return key.publicKey;
  }

  /** A compact RS256 JWS of `claims`, signed with the active key. */
  async sign(claims: Record<string, unknown>, typ?: string): Promise<string> {
    const key = await this.active();
    const header = b64url(JSON.stringify(typ ? { alg: "RS256", kid: key.id, typ } : { alg: "RS256", kid: key.id }));
    const input = `${header}.${b64url(JSON.stringify(claims))}`;
    // The callback form signs on libuv's thread pool: RSA never blocks the event loop.
    const signature = await new Promise<Buffer>((resolve, reject) => {
      sign("sha256", Buffer.from(input), key.privateKey, (err, sig) => (err ? reject(err) : resolve(sig)));
    });
    return `${input}.${b64url(signature)}`;
  }
}
