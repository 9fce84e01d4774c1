// The master key as the domain's Sealer (secrets at rest other than signing keys: TOTP secrets), and the start-up
// work on them that the signing keys do too: re-sealing what SVC_MASTER_KEY_PREVIOUS sealed, and refusing to start
// with a master key that does not open them.
import type { Logger } from "pino";
import type { Sealer } from "../domain/identity/authn/ports.js";
import type { Store } from "../store/index.js";
import { seal, unseal } from "./secretbox.js";

export function masterKeySealer(key: Buffer): Sealer {
  return { seal: (plaintext, aad) => seal(key, plaintext, aad), open: (sealed, aad) => unseal(key, sealed, aad) };
}

/** The additional data of a user's sealed TOTP secret. */
export const totpAad = (instanceId: string, userId: string) => `svc:totp:${instanceId}:${userId}`;

/** The additional data of an identity provider's sealed client secret. */
export const idpSecretAad = (instanceId: string, idpId: string) => `svc:idp-secret:${instanceId}:${idpId}`;

/** The additional data of an external sign-in intent's sealed PKCE verifier. */
export const intentVerifierAad = (instanceId: string, intentId: string) => `svc:idp-intent:${instanceId}:${intentId}`;

function opens(key: Buffer, sealed: Uint8Array, aad: string): boolean {
  try {
    unseal(key, sealed, aad);
    return true;
  } catch {
    return false;
  }
}

/**
 * Like SigningKeys.checkMasterKey for the TOTP secrets: with `previous`, every secret it sealed is sealed again with
 * `key` (one transaction, under the signing keys' rotation lock); then the newest secret must open.
 */
export async function checkSealedTotpSecrets(o: {
  store: Store;
  instanceId: string;
  key: Buffer;
  whose: string;
  previous?: Buffer;
  log: Logger;
}): Promise<void> {
  const { store, instanceId, key, previous } = o;
  if (previous) {
    const resealed = await store.transaction(async (tx) => {
      // The signing keys' lock: replicas starting together re-seal one after the other.
      await tx.keys.lockRotation();
      let n = 0;
      for (const row of await tx.authn.sealedTotpSecrets(instanceId)) {
        const aad = totpAad(instanceId, row.userId);
        if (opens(key, row.secretEnc, aad)) continue;
        if (!opens(previous, row.secretEnc, aad)) {
          throw new Error(`neither SVC_MASTER_KEY nor SVC_MASTER_KEY_PREVIOUS opens the TOTP secret of user ${row.userId}: nothing was re-sealed`);
        }
        await tx.authn.resealTotp(row.userId, seal(key, unseal(previous, row.secretEnc, aad), aad));
        n++;
      }
      return n;
    });
    if (resealed > 0) o.log.warn({ resealed }, "sealed the TOTP secrets again with the new SVC_MASTER_KEY");
  }
  const newest = await store.authn.newestTotpSecret(instanceId);
  if (newest && !opens(key, newest.secretEnc, totpAad(instanceId, newest.userId))) {
    throw new Error(
      `${o.whose} does not open the TOTP secrets this database holds (that of user ${newest.userId} was sealed with another master key). ` +
        "Start with the master key this database was created with (kept with its backups); to replace it, see the README, Master key.",
    );
  }
}
