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

/** The additional data of a SAML signing certificate's sealed private key. */
export const samlCertificateAad = (instanceId: string, certificateId: string) => `svc:saml-certificate:${instanceId}:${certificateId}`;

/** The additional data of an action target's sealed signing key. */
export const actionTargetAad = (instanceId: string, targetId: string) => `svc:action-target:${instanceId}:${targetId}`;

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

/** One kind of secret sealed with the master key: how to list, re-seal and find the newest of them. */
interface SealedKind {
  /** In messages: "TOTP secret", "identity provider client secret". */
  what: string;
  list(tx: Store, instanceId: string): Promise<{ id: string; sealed: Uint8Array }[]>;
  aad(instanceId: string, id: string): string;
  reseal(tx: Store, id: string, sealed: Uint8Array<ArrayBuffer>): Promise<void>;
  newest(store: Store, instanceId: string): Promise<{ id: string; sealed: Uint8Array } | null>;
}

const SEALED_KINDS: SealedKind[] = [
  {
    what: "TOTP secret",
    list: async (tx, instanceId) => (await tx.authn.sealedTotpSecrets(instanceId)).map((r) => ({ id: r.userId, sealed: r.secretEnc })),
    aad: totpAad,
    reseal: (tx, id, sealed) => tx.authn.resealTotp(id, sealed),
    newest: async (store, instanceId) => {
      const r = await store.authn.newestTotpSecret(instanceId);
      return r && { id: r.userId, sealed: r.secretEnc };
    },
  },
  {
    what: "identity provider client secret",
    list: (tx, instanceId) => tx.idps.sealedSecrets(instanceId),
    aad: idpSecretAad,
    reseal: (tx, id, sealed) => tx.idps.resealSecret(id, sealed),
    newest: (store, instanceId) => store.idps.newestSealedSecret(instanceId),
  },
  {
    what: "SAML signing certificate key",
    list: async (tx, instanceId) => (await tx.saml.sealedCertificates(instanceId)).map((r) => ({ id: r.id, sealed: r.privateKeyEnc })),
    aad: samlCertificateAad,
    reseal: (tx, id, sealed) => tx.saml.resealCertificate(id, sealed),
    newest: async (store, instanceId) => {
      const r = await store.saml.newestCertificate(instanceId);
      return r && { id: r.id, sealed: r.privateKeyEnc };
    },
  },
  {
    what: "action target signing key",
    list: (tx, instanceId) => tx.actions.sealedKeys(instanceId),
    aad: actionTargetAad,
    reseal: (tx, id, sealed) => tx.actions.resealKey(id, sealed),
    newest: (store, instanceId) => store.actions.newestSealedKey(instanceId),
  },
];

/**
 * Like SigningKeys.checkMasterKey for the other sealed secrets (TOTP secrets, identity providers' client secrets, SAML
 * certificates' private keys):
 * with `previous`, every secret it sealed is sealed again with `key` (one transaction, under the signing keys'
 * rotation lock); then the newest secret of each kind must open. An external sign-in intent's PKCE verifier lives ten
 * minutes and is not carried over: a sign-in under way during the rotation starts again.
 */
export async function checkSealedSecrets(o: { store: Store; instanceId: string; key: Buffer; whose: string; previous?: Buffer; log: Logger }): Promise<void> {
  for (const kind of SEALED_KINDS) await checkSealed(o, kind);
}

async function checkSealed(
  o: { store: Store; instanceId: string; key: Buffer; whose: string; previous?: Buffer; log: Logger },
  kind: SealedKind,
): Promise<void> {
  const { store, instanceId, key, previous } = o;
  if (previous) {
    const resealed = await store.transaction(async (tx) => {
      // The signing keys' lock: replicas starting together re-seal one after the other.
      await tx.keys.lockRotation();
      let n = 0;
      for (const row of await kind.list(tx, instanceId)) {
        const aad = kind.aad(instanceId, row.id);
        if (opens(key, row.sealed, aad)) continue;
        if (!opens(previous, row.sealed, aad)) {
          throw new Error(`neither SVC_MASTER_KEY nor SVC_MASTER_KEY_PREVIOUS opens the ${kind.what} of ${row.id}: nothing was re-sealed`);
        }
        await kind.reseal(tx, row.id, seal(key, unseal(previous, row.sealed, aad), aad));
        n++;
      }
      return n;
    });
    if (resealed > 0) o.log.warn({ resealed }, `sealed the ${kind.what}s again with the new SVC_MASTER_KEY`);
  }
  const newest = await kind.newest(store, instanceId);
  if (newest && !opens(key, newest.sealed, kind.aad(instanceId, newest.id))) {
    throw new Error(
      `${o.whose} does not open the ${kind.what}s this database holds (that of ${newest.id} was sealed with another master key). ` +
        "Start with the master key this database was created with (kept with its backups); to replace it, see the README, Master key.",
    );
  }
}
