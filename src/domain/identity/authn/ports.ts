// What the authentication methods need from outside the domain, as interfaces the composition root fills: a mail
// sender (SMTP in production, src/mail) and the master key's sealing of secrets at rest (src/crypto/sealer.ts).

import type { MailLanguage, MailText, MailType, MailValues } from "../../mail/texts.js";

/**
 * One message to one recipient, as the domain decides it: which mail, in which language, with which values, in the
 * organization's branding, and the instance's own texts of that mail and language when it has them. The mailer
 * renders it (src/mail: the catalogue's texts, a plain-text and an HTML part) and sends it.
 */
export interface Mail {
  to: string;
  type: MailType;
  language: MailLanguage;
  values: MailValues;
  branding: MailBranding;
  /** The instance's texts (SetMailText) instead of the catalogue's. */
  text?: MailText;
}

/** What of the organization's branding settings a mail shows (the light theme: mail clients rarely follow dark mode). */
export interface MailBranding {
  primaryColor: string;
  backgroundColor: string;
  fontColor: string;
  /** Empty: none. */
  logoUrl: string;
}

/** Delivers mail; rejects when the message could not be handed to the mail server. */
export interface Mailer {
  send(mail: Mail): Promise<void>;
}

/** AES-256-GCM with the master key; `aad` binds a ciphertext to its purpose and row. */
export interface Sealer {
  seal(plaintext: Uint8Array, aad: string): Uint8Array<ArrayBuffer>;
  /** Throws when the key is wrong or the data was altered. */
  open(sealed: Uint8Array, aad: string): Buffer;
}

/** When a command changed the user's methods, and the user's organization (the change's resource owner). */
export interface Change {
  at: Date;
  orgId: string;
}

/** What the authentication methods are configured with. */
export interface AuthnSettings {
  sealer: Sealer;
  /** SVC_EXTERNAL_URL: its host is the default relying party of passkeys. */
  externalUrl: string;
  /**
   * The origins an application's login base URL may name: the instance's own (SVC_EXTERNAL_URL's, SVC_LOGIN_URL's) and
   * SVC_LOGIN_UI_ALLOWED_ORIGINS. Unset: the external URL's only.
   */
  loginOrigins?: readonly string[];
}
