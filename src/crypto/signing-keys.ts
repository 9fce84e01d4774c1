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
import type { PrismaClient } from "../store/db.js";
import { seal, unseal } from "./secretbox.js";

const generateKeyPairAsync = promisify(generateKeyPair);
/** Advisory lock key serialising rotations across replicas. */
const ROTATION_LOCK = 0x737663_02;
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

export interface SigningKeyOptions {
  db: PrismaClient;
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

  /** Marks the in-memory set as outdated (another replica rotated). */
  invalidate(): void {
    this.stale = true;
  }

  async load(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const now = this.o.clock();
        const rows = await this.o.db.signingKey.findMany({
          where: { instanceId: this.o.instanceId, OR: [{ verifyUntil: null }, { verifyUntil: { gt: now } }] },
          orderBy: { activeFrom: "desc" },
        });
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
    const { publicKey: _p, privateKey } = await generateKeyPairAsync("rsa", { modulusLength: 2048 });
    const der = privateKey.export({ format: "der", type: "pkcs8" });
    const publicJwk = createPublicKey(privateKey).export({ format: "jwk" }) as JsonWebKey;
    const rotated = await this.o.db.$transaction(async (tx) => {
      await tx.$executeRaw`SELECT pg_advisory_xact_lock(${ROTATION_LOCK})`;
      const now = this.o.clock();
      const latest = await tx.signingKey.findFirst({
        where: { instanceId: this.o.instanceId, activeFrom: { lte: now } },
        orderBy: { activeFrom: "desc" },
        select: { activeFrom: true },
      });
      if (!force && latest && now.getTime() - latest.activeFrom.getTime() < this.o.rotationSeconds * 1000) return false;
      const id = newId();
      await tx.signingKey.updateMany({
        where: { instanceId: this.o.instanceId, verifyUntil: null },
        data: { verifyUntil: new Date(now.getTime() + this.o.overlapSeconds * 1000) },
      });
      await tx.signingKey.create({
        data: {
          id,
          instanceId: this.o.instanceId,
          alg: "RS256",
          publicJwk: { kty: publicJwk.kty, n: publicJwk.n, e: publicJwk.e },
          privateKeyEnc: seal(this.o.masterKey, der, this.aad(id)),
          activeFrom: now,
          createdAt: now,
        },
      });
      await tx.$executeRaw`SELECT pg_notify('svc_auth', ${JSON.stringify({ keys: true })})`;
      this.o.log.info({ keyId: id }, "signing key rotated");
      return true;
    });
    await this.load();
    return rotated;
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
