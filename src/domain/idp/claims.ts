// The claim mapping of a provider: which claim holds each profile field (the OpenID Connect standard ones by default)
// and the profile read from a provider's claims with it. The provider's user id is always `sub`.
import { invalidArgument } from "../errors.js";

export interface ClaimMapping {
  email: string;
  emailVerified: string;
  givenName: string;
  familyName: string;
  displayName: string;
  preferredUsername: string;
}

export const STANDARD_CLAIMS: ClaimMapping = {
  email: "email",
  emailVerified: "email_verified",
  givenName: "given_name",
  familyName: "family_name",
  displayName: "name",
  preferredUsername: "preferred_username",
};

/** A SAML provider's attributes by default: svc's own SAML attributes; no attribute vouches for the e-mail address. */
export const SAML_ATTRIBUTES: ClaimMapping = {
  email: "Email",
  emailVerified: "",
  givenName: "FirstName",
  familyName: "SurName",
  displayName: "FullName",
  preferredUsername: "UserName",
};

export interface ExternalProfile {
  email: string;
  emailVerified: boolean;
  givenName: string;
  familyName: string;
  displayName: string;
  preferredUsername: string;
}

const CLAIM_NAME = /^[\w.:/-]{1,200}$/;

/** A mapping as given (empty fields: the default, the standard claim unless `base` says otherwise), checked. */
export function claimMapping(given: Partial<ClaimMapping> | undefined, base: ClaimMapping = STANDARD_CLAIMS): ClaimMapping {
  const out = { ...base };
  for (const key of Object.keys(STANDARD_CLAIMS) as (keyof ClaimMapping)[]) {
    const v = given?.[key]?.trim();
    if (!v) continue;
    if (!CLAIM_NAME.test(v)) {
      throw invalidArgument("Errors.IDP.ClaimMapping.Invalid", `claim_mapping.${key} must be a claim name`, { field: `claim_mapping.${key}` });
    }
    out[key] = v;
  }
  return out;
}

/** The stored mapping (older rows or fields missing: the defaults, the standard claims unless `base` says otherwise). */
export function storedMapping(stored: unknown, base: ClaimMapping = STANDARD_CLAIMS): ClaimMapping {
  const s = stored && typeof stored === "object" ? (stored as Record<string, unknown>) : {};
  const out = { ...base };
  for (const key of Object.keys(STANDARD_CLAIMS) as (keyof ClaimMapping)[]) if (typeof s[key] === "string" && s[key]) out[key] = s[key] as string;
  return out;
}

const MAX_FIELD = 200;

function text(claims: Record<string, unknown>, name: string): string {
  const v = claims[name];
  return typeof v === "string" ? v.trim().slice(0, MAX_FIELD) : "";
}

export function profileOf(claims: Record<string, unknown>, m: ClaimMapping): ExternalProfile {
  const verified = m.emailVerified ? claims[m.emailVerified] : undefined;
  return {
    email: text(claims, m.email),
    // Some providers send "true" as a string.
    emailVerified: verified === true || verified === "true",
    givenName: text(claims, m.givenName),
    familyName: text(claims, m.familyName),
    displayName: text(claims, m.displayName),
    preferredUsername: text(claims, m.preferredUsername),
  };
}

/** The profile as stored on an intent. */
export function storedProfile(stored: unknown): ExternalProfile {
  const s = stored && typeof stored === "object" ? (stored as Record<string, unknown>) : {};
  const str = (k: string) => (typeof s[k] === "string" ? (s[k] as string) : "");
  return {
    email: str("email"),
    emailVerified: s.emailVerified === true,
    givenName: str("givenName"),
    familyName: str("familyName"),
    displayName: str("displayName"),
    preferredUsername: str("preferredUsername"),
  };
}

/** The name a provider's user goes by: its preferred username, else its e-mail, else its id there. */
export const externalUserName = (p: ExternalProfile, sub: string) => p.preferredUsername || p.email || sub;
