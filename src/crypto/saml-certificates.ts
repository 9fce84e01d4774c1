// The SAML identity provider's signing certificates: self-signed X.509 over RSA-2048 keys, stored in SamlCertificate
// with the private key sealed by the master key, so every replica signs with the same certificate and SPs see one
// metadata. The RSA key is generated with node:crypto's asynchronous generateKeyPair (off the event loop) and signs its
// certificate with node:crypto too (x509.ts); node-forge only encodes the certificate.
//
// Rotation, like the token-signing keys: the newest certificate whose activeFrom has passed signs; a rotation gives the
// previous ones a verifyUntil of now + overlap, during which the metadata lists them too (SPs that refresh metadata pick
// up the new one before the old one goes).
import { createPrivateKey, generateKeyPair, type KeyObject, randomBytes } from "node:crypto";
import { promisify } from "node:util";
import forge from "node-forge";
import type { Logger } from "pino";
import { newId } from "../domain/ids.js";
import type { Store } from "../store/index.js";
import { samlCertificateAad } from "./sealer.js";
import { seal, unseal } from "./secretbox.js";
import { signCertificate } from "./x509.js";

const generateKeyPairAsync = promisify(generateKeyPair);

export interface SamlCertificate {
  id: string;
  /** PEM of the X.509 certificate. */
  pem: string;
  /** The certificate's DER in base64, as KeyInfo and metadata carry it. */
  base64: string;
  privateKey: KeyObject;
  activeFrom: number;
}

export interface SamlCertificateOptions {
  store: Store;
  instanceId: string;
  masterKey: Buffer;
  rotationSeconds: number;
  overlapSeconds: number;
  clock: () => Date;
  log: Logger;
  /** The certificate's subject common name (the external host). */
  commonName: string;
}

const base64Of = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, "").replace(/\s+/g, "");

export class SamlCertificates {
  private certs: SamlCertificate[] = [];
  private loading: Promise<void> | undefined;
  private stale = true;

  constructor(private readonly o: SamlCertificateOptions) {}

  /** Marks the in-memory set as outdated (another replica rotated, or time moved on). */
  invalidate(): void {
    this.stale = true;
  }

  private async load(): Promise<void> {
    this.loading ??= (async () => {
      try {
        const rows = await this.o.store.saml.verifyingCertificates(this.o.instanceId, this.o.clock());
        const known = new Map(this.certs.map((c) => [c.id, c]));
        this.certs = rows.map((row) => {
          const have = known.get(row.id);
          if (have) return have;
          const der = unseal(this.o.masterKey, row.privateKeyEnc, samlCertificateAad(this.o.instanceId, row.id));
          const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
          return { id: row.id, pem: row.certificatePem, base64: base64Of(row.certificatePem), privateKey, activeFrom: row.activeFrom.getTime() };
        });
        this.stale = false;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  /** The certificate that signs now, creating or rotating first when there is none or it is due. */
  async active(): Promise<SamlCertificate> {
    if (this.stale) await this.load();
    const now = this.o.clock().getTime();
    const cert = this.certs.find((c) => c.activeFrom <= now);
    if (cert && now - cert.activeFrom < this.o.rotationSeconds * 1000) return cert;
    await this.rotate(false);
    const after = this.certs.find((c) => c.activeFrom <= this.o.clock().getTime());
    if (!after) throw new Error("no SAML certificate after rotation");
    return after;
  }

  /** Every certificate the metadata lists now (the active one first). */
  async listed(): Promise<SamlCertificate[]> {
    await this.active();
    return this.certs;
  }

  /** Inserts a new certificate (when `force`, or none is active or it is due), serialised across replicas. */
  async rotate(force: boolean): Promise<boolean> {
    const { privateKey } = await generateKeyPairAsync("rsa", { modulusLength: 2048 });
    const { instanceId } = this.o;
    const rotated = await this.o.store.transaction(async (tx) => {
      await tx.saml.lockRotation();
      const now = this.o.clock();
      const latest = await tx.saml.latestCertificateStart(instanceId, now);
      if (!force && latest && now.getTime() - latest.getTime() < this.o.rotationSeconds * 1000) return undefined;
      const id = newId();
      await tx.saml.retireCertificates(instanceId, new Date(now.getTime() + this.o.overlapSeconds * 1000));
      const der = privateKey.export({ format: "der", type: "pkcs8" });
      await tx.saml.insertCertificate({
        id,
        instanceId,
        certificatePem: this.certificate(privateKey, now),
        privateKeyEnc: seal(this.o.masterKey, der, samlCertificateAad(instanceId, id)),
        at: now,
      });
      await tx.keys.announceRotation();
      return id;
    });
    if (rotated) this.o.log.info({ certificateId: rotated }, "SAML signing certificate rotated");
    await this.load();
    return rotated !== undefined;
  }

  /** A self-signed certificate for the key, valid through its signing period and the overlap after it. */
  private certificate(privateKey: KeyObject, now: Date): string {
    const key = forge.pki.privateKeyFromPem(privateKey.export({ format: "pem", type: "pkcs1" }) as string) as forge.pki.rsa.PrivateKey;
    const cert = forge.pki.createCertificate();
    cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
    // A positive serial: the leading 0x01 keeps the top bit clear.
    cert.serialNumber = `01${randomBytes(15).toString("hex")}`;
    cert.validity.notBefore = new Date(now.getTime() - 60_000);
    cert.validity.notAfter = new Date(now.getTime() + (this.o.rotationSeconds + this.o.overlapSeconds + 86_400) * 1000);
    const name = [{ name: "commonName", value: this.o.commonName.slice(0, 64) }];
    cert.setSubject(name);
    cert.setIssuer(name);
    cert.setExtensions([
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, critical: true },
    ]);
    signCertificate(cert, privateKey);
    return forge.pki.certificateToPem(cert);
  }
}
