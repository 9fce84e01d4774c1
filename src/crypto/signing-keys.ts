// The instance's token-signing keys: one of each algorithm (RS256, ES256, EdDSA
// with Ed25519), rotated together. Stored in SigningKey with the
// private part sealed by the master key, so every replica signs and verifies
// with the same keys. Keys are imported once into KeyObjects and kept in
// memory; the set is reloaded when another replica rotates (auth-cache
// notifications) or when a token names a kid we have not seen yet.
//
// Rotation: of each algorithm, the newest key whose activeFrom has passed signs.
// A rotation inserts a fresh key of each algorithm active now and gives the
// previous ones a verifyUntil of now + overlap (at least the longest token
// lifetime), so nothing issued before becomes unverifiable. An algorithm with
// no key yet (a database from before it was supported) gets one at its first
// use without retiring the others'. JWKS lists every key not past its verifyUntil.
import { createPrivateKey, createPublicKey, generateKeyPair, type JsonWebKey, type KeyObject, sign } from "node:crypto";
import { promisify } from "node:util";
import type { Logger } from "pino";
import { SIGNING_ALGS, type SigningAlg } from "../domain/access/app-settings.js";
import { newId } from "../domain/ids.js";
import type { Store } from "../store/index.js";
import { seal, unseal } from "./secretbox.js";

const generateKeyPairAsync = promisify(generateKeyPair);
/** A token naming an unknown kid reloads the key set at most this often. */
const UNKNOWN_KID_RELOAD_MS = 2_000;

interface LoadedKey {
  id: string;
  alg: SigningAlg;
  activeFrom: number;
  verifyUntil: number | null;
  privateKey: KeyObject;
  publicKey: KeyObject;
  jwk: JsonWebKey;
}

export interface Rotation {
  /** The new RS256 key (the one every client can verify), or the first new key when RS256 was not rotated. */
  id: string;
  alg: string;
  /** Every key this rotation inserted, one per algorithm rotated. */
  keys: { id: string; alg: SigningAlg }[];
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

/** The JWS algorithm a key of ours signs with, from its type. */
export function algOf(key: KeyObject): SigningAlg | undefined {
  switch (key.asymmetricKeyType) {
    case "rsa":
      return "RS256";
    case "ec":
      return key.asymmetricKeyDetails?.namedCurve === "prime256v1" ? "ES256" : undefined;
    case "ed25519":
      return "EdDSA";
    default:
      return undefined;
  }
}

/** A fresh key pair of `alg`, generated on libuv's thread pool (never on the event loop). */
async function newKeyPair(alg: SigningAlg): Promise<KeyObject> {
  switch (alg) {
    case "RS256":
      return (await generateKeyPairAsync("rsa", { modulusLength: 2048 })).privateKey;
    case "ES256":
      return (await generateKeyPairAsync("ec", { namedCurve: "P-256" })).privateKey;
    case "EdDSA":
      return (await generateKeyPairAsync("ed25519")).privateKey;
  }
}

/** The JWS signature of `input` (ES256 as R || S, RFC 7518 §3.4), computed off the event loop. */
function signAsync(alg: SigningAlg, input: Buffer, key: KeyObject): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const done = (err: Error | null, sig: Buffer) => (err ? reject(err) : resolve(sig));
    if (alg === "EdDSA") sign(null, input, key, done);
    else if (alg === "ES256") sign("sha256", input, { key, dsaEncoding: "ieee-p1363" }, done);
    else sign("sha256", input, key, done);
  });
}

/** The public JWK members of a key (what SigningKey.publicJwk holds). */
function publicMembers(key: KeyObject): Record<string, string> {
  const { kty, n, e, crv, x, y } = createPublicKey(key).export({ format: "jwk" }) as Record<string, string | undefined>;
  return Object.fromEntries(Object.entries({ kty, n, e, crv, x, y }).filter((kv): kv is [string, string] => typeof kv[1] === "string"));
}

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
          const alg = algOf(privateKey);
          if (!alg || alg !== row.alg) throw new Error(`signing key ${row.id} is not an ${row.alg} key`);
          const jwk = { ...(publicKey.export({ format: "jwk" }) as JsonWebKey), kid: row.id, use: "sig", alg };
          next.push({ id: row.id, alg, activeFrom: row.activeFrom.getTime(), verifyUntil: row.verifyUntil?.getTime() ?? null, privateKey, publicKey, jwk });
        }
        // Newest first; of keys rotated together RS256 first, for clients that take the first key they read.
        next.sort((a, b) => b.activeFrom - a.activeFrom || SIGNING_ALGS.indexOf(a.alg) - SIGNING_ALGS.indexOf(b.alg));
        this.keys = next;
        this.jwksBody = JSON.stringify({ keys: next.map((k) => k.jwk) });
        this.stale = false;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  private current(now: number, alg: SigningAlg): LoadedKey | undefined {
    return this.keys.find((k) => k.alg === alg && k.activeFrom <= now);
  }

  /** The key of `alg` that signs now, rotating first when it is due (or there is none). */
  async active(alg: SigningAlg = "RS256"): Promise<LoadedKey> {
    if (this.stale) await this.load();
    const now = this.o.clock().getTime();
    const key = this.current(now, alg);
    if (key && now - key.activeFrom < this.o.rotationSeconds * 1000) return key;
    await this.rotate(false);
    const after = this.current(this.o.clock().getTime(), alg);
    if (!after) throw new Error(`no ${alg} signing key after rotation`);
    return after;
  }

  /**
   * Every algorithm has an active key that is not due (one rotation makes what is missing): what start-up waits for,
   * so that the JWKS lists a key of each algorithm before the first token (a database from before ES256 and EdDSA
   * gets theirs here).
   */
  async ready(): Promise<void> {
    if (this.stale) await this.load();
    const now = this.o.clock().getTime();
    const due = (alg: SigningAlg) => {
      const key = this.current(now, alg);
      return !key || now - key.activeFrom >= this.o.rotationSeconds * 1000;
    };
    if (SIGNING_ALGS.some(due)) await this.rotate(false);
  }

  /**
   * Inserts a new signing key of each algorithm that is due (or of every one when `force`). Serialised across
   * replicas; returns whether it rotated.
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
    // One key of each algorithm, made before the transaction (RSA takes a while); those not due are dropped.
    const fresh = await Promise.all(SIGNING_ALGS.map(async (alg) => ({ alg, privateKey: await newKeyPair(alg) })));
    const { instanceId } = this.o;
    const rotation = await this.o.store.transaction(async (tx) => {
      await tx.keys.lockRotation();
      const now = this.o.clock();
      const due: typeof fresh = [];
      for (const k of fresh) {
        const latest = await tx.keys.latestActiveFrom(instanceId, now, k.alg);
        if (force || !latest || now.getTime() - latest.getTime() >= this.o.rotationSeconds * 1000) due.push(k);
      }
      if (due.length === 0) return undefined;
      const verifyUntil = new Date(now.getTime() + this.o.overlapSeconds * 1000);
      const retiredKeyIds = await tx.keys.retireActive(
        instanceId,
        verifyUntil,
        due.map((k) => k.alg),
      );
      const keys: Rotation["keys"] = [];
      for (const k of due) {
        const id = newId();
        const der = k.privateKey.export({ format: "der", type: "pkcs8" });
        await tx.keys.insert({
          id,
          instanceId,
          alg: k.alg,
          publicJwk: publicMembers(k.privateKey),
          privateKeyEnc: seal(this.o.masterKey, der, this.aad(id)),
          at: now,
        });
        keys.push({ id, alg: k.alg });
      }
      const first = keys.find((k) => k.alg === "RS256") ?? (keys[0] as Rotation["keys"][number]);
      const done: Rotation = { id: first.id, alg: first.alg, keys, createdAt: now, retiredKeyIds, verifyUntil };
      if (inTx) await inTx(tx, done);
      await tx.keys.announceRotation();
      return done;
    });
    if (rotation) this.o.log.info({ keyIds: rotation.keys.map((k) => k.id) }, "signing keys rotated");
    await this.load();
    return rotation;
  }

  /** The instance's keys in all of `states` (newest first unless `asc`): public metadata only, with their state now. */
  async list(input: { offset: number; limit: number; asc: boolean; states: readonly SigningKeyState[] }): Promise<{ total: number; keys: SigningKeyInfo[] }> {
    const rows = await this.o.store.keys.list(this.o.instanceId);
    const rank = (alg: string) => SIGNING_ALGS.indexOf(alg as SigningAlg);
    rows.sort((a, b) => b.activeFrom.getTime() - a.activeFrom.getTime() || rank(a.alg) - rank(b.alg));
    // The state depends on the neighbours (the newest started key is the active one), so it is
    // decided over the whole set; an instance holds a handful of keys.
    const now = this.o.clock().getTime();
    // One active key per algorithm: the newest started one of it.
    const activeSeen = new Set<string>();
    let keys: SigningKeyInfo[] = rows.map((r) => {
      let state: SigningKeyState;
      if (r.activeFrom.getTime() > now) state = "PENDING";
      else if (r.verifyUntil && r.verifyUntil.getTime() <= now) state = "EXPIRED";
      else if (!activeSeen.has(r.alg)) state = "ACTIVE";
      else state = "RETIRED";
      if (state === "ACTIVE") activeSeen.add(r.alg);
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

  /** A compact JWS of `claims` (RS256 unless `alg` says otherwise), signed with that algorithm's active key. */
  async sign(claims: Record<string, unknown>, typ?: string, alg: SigningAlg = "RS256"): Promise<string> {
    const key = await this.active(alg);
    const header = b64url(JSON.stringify(typ ? { alg, kid: key.id, typ } : { alg, kid: key.id }));
    const input = `${header}.${b64url(JSON.stringify(claims))}`;
    return `${input}.${b64url(await signAsync(alg, Buffer.from(input), key.privateKey))}`;
  }
}
