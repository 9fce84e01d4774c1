// AES-256-GCM encryption of secrets at rest (signing keys) with the master key.
// Layout: version byte (1) | 12-byte nonce | ciphertext | 16-byte tag. The
// additional data binds a ciphertext to its purpose and row.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmod, mkdir, open, readFile } from "node:fs/promises";
import path from "node:path";
import { parseMasterKey } from "../config.js";

const VERSION = 1;

export function seal(key: Buffer, plaintext: Uint8Array, aad: string): Uint8Array<ArrayBuffer> {
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  cipher.setAAD(Buffer.from(aad, "utf8"));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return new Uint8Array(Buffer.concat([Buffer.from([VERSION]), nonce, body, cipher.getAuthTag()]));
}

/** Throws when the key is wrong or the data was altered. */
export function open_(key: Buffer, sealed: Uint8Array, aad: string): Buffer {
  const data = Buffer.from(sealed);
  if (data.length < 1 + 12 + 16 || data[0] !== VERSION) throw new Error("sealed data has an unknown format");
  const decipher = createDecipheriv("aes-256-gcm", key, data.subarray(1, 13));
  decipher.setAAD(Buffer.from(aad, "utf8"));
  decipher.setAuthTag(data.subarray(data.length - 16));
  return Buffer.concat([decipher.update(data.subarray(13, data.length - 16)), decipher.final()]);
}
export { open_ as unseal };

/**
 * The embedded database's master key: `<dataDir>/master.key` (0600), created
 * on first start. Returns whether it was generated so the caller can log it.
 */
export async function embeddedMasterKey(dataDir: string, holdsSealedData: () => Promise<boolean>): Promise<{ key: Buffer; generated: boolean; file: string }> {
  const file = path.join(dataDir, "master.key");
  try {
    const key = parseMasterKey(await readFile(file, "utf8"));
    if (!key) throw new Error(`${file} does not hold a 32-byte key (base64 or hex)`);
    return { key, generated: false, file };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  // A new key could never open what an old one sealed: generating one for such a database would only move the
  // failure to the first request that signs, and lose the chance to put the right file back.
  if (await holdsSealedData()) {
    throw new Error(
      `${file} is missing, but the database in ${dataDir} holds keys sealed with a master key: put back the master.key ` +
        "kept with this data directory's backup (or set SVC_MASTER_KEY to it); svc does not generate a new one for it",
    );
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  const handle = await open(file, "wx", 0o600);
  try {
    await handle.writeFile(`${key.toString("base64")}\n`);
  } finally {
    await handle.close();
  }
  await chmod(file, 0o600);
  return { key, generated: true, file };
}
