// What the SAML identity provider runs on: the store, its signing certificates, its URLs and the request lifetime.
// Built once by the composition root and handed to the SSO endpoint and SAMLService.
import type { KeyObject } from "node:crypto";
import type { Logger } from "pino";
import type { Store } from "../../store/index.js";
import type { SamlAppRow } from "../../store/saml.js";
import type { Clock } from "../context.js";
import type { AuthCache } from "../oauth/runtime.js";

export interface IdpCertificate {
  id: string;
  pem: string;
  /** Base64 DER, as KeyInfo and metadata carry it. */
  base64: string;
  privateKey: KeyObject;
}

/** The IdP's certificates: the one signing now, and every one the metadata lists (signing first). */
export interface IdpCertificates {
  active(): Promise<IdpCertificate>;
  listed(): Promise<IdpCertificate[]>;
}

export interface SamlIdp {
  store: Store;
  instanceId: string;
  clock: Clock;
  log: Logger;
  /** SVC_EXTERNAL_URL: the entity id and endpoints are built on it. */
  externalUrl: string;
  /** The login UI the SSO endpoint sends browsers to, with ?samlRequest=<id>. */
  loginUrl: string;
  certificates: IdpCertificates;
  /** Seconds a request waits for the login UI (as auth requests do). */
  requestLifetime: number;
  /** Every AuthnRequest must be signed, whatever the SP's metadata says. */
  wantAuthnRequestsSigned: boolean;
  /** The registered SPs by entity id, in front of the store (app changes invalidate them by organization on every replica). */
  apps: AuthCache<SamlAppRow>;
}

/** How long an SP's record is used without reading it again: its changes notify every replica; this bounds a missed one. */
const APP_TTL_MS = 1_000;

/**
 * The SAML application registered with this SP entity id, or null. Every AuthnRequest and LogoutRequest starts here,
 * so the record is cached for a second (as OAuth clients are), tagged with its organization: any change of the app,
 * its project or its organization drops it at once, here and on the other replicas. An unknown entity id is read
 * every time, never stored (an anonymous caller cannot fill the cache with names).
 */
export async function samlAppByEntityId(idp: SamlIdp, entityId: string): Promise<SamlAppRow | null> {
  const app = await idp.apps.load(entityId, async () => {
    const row = await idp.store.saml.appByEntityId(idp.instanceId, entityId);
    return row ? { value: row, tags: { orgId: row.orgId }, ttlMs: APP_TTL_MS } : undefined;
  });
  return app ?? null;
}

/** The IdP's entity id (also the Issuer of its responses): the metadata URL. */
export const entityIdOf = (externalUrl: string) => `${externalUrl}/saml/v2/metadata`;
export const ssoUrlOf = (externalUrl: string) => `${externalUrl}/saml/v2/SSO`;
export const sloUrlOf = (externalUrl: string) => `${externalUrl}/saml/v2/SLO`;
