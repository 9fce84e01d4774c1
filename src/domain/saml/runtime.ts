// What the SAML identity provider runs on: the store, its signing certificates, its URLs and the request lifetime.
// Built once by the composition root and handed to the SSO endpoint and SAMLService.
import type { KeyObject } from "node:crypto";
import type { Logger } from "pino";
import type { Store } from "../../store/index.js";
import type { Clock } from "../context.js";

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
}

/** The IdP's entity id (also the Issuer of its responses): the metadata URL. */
export const entityIdOf = (externalUrl: string) => `${externalUrl}/saml/v2/metadata`;
export const ssoUrlOf = (externalUrl: string) => `${externalUrl}/saml/v2/SSO`;
export const sloUrlOf = (externalUrl: string) => `${externalUrl}/saml/v2/SLO`;
