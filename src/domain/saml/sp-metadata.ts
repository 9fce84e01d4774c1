// A service provider's metadata (SAML 2.0 Metadata §2.3.2, §2.4.4): what svc keeps of it when a SAML application is
// registered. Only what the metadata declares is ever used: the ACS URLs (matched exactly), the signing certificates
// that verify its AuthnRequests (never one from a request's KeyInfo) and whether it signs them.
import { invalidArgument } from "../errors.js";
import { type EntityMetadata, readEntityMetadata } from "./metadata.js";
import { attr, BINDINGS } from "./xml.js";

export interface AssertionConsumerService {
  url: string;
  binding: string;
  index: number;
  isDefault: boolean;
}

export interface SpMetadata {
  entityId: string;
  acs: AssertionConsumerService[];
  /** Base64 DER of the signing certificates. */
  signingCertificates: string[];
  /** Base64 DER of the encryption certificate, kept for encrypted assertions. */
  encryptionCertificate?: string;
  authnRequestsSigned: boolean;
  /** SingleLogoutService endpoints (HTTP-Redirect, HTTP-POST): where LogoutRequests and LogoutResponses go. */
  slo?: SingleLogoutService[];
}

export interface SingleLogoutService {
  binding: string;
  url: string;
  /** ResponseLocation: where LogoutResponses go (url when absent). */
  responseUrl?: string;
}

export const MAX_METADATA_BYTES = 256 * 1024;
const MAX_ACS = 20;
const MAX_URL = 2000;
const SUPPORTED = new Set<string>([BINDINGS.post, BINDINGS.redirect]);

const bad = (message: string) => invalidArgument("Errors.App.Saml.Metadata.Invalid", `saml.metadata_xml: ${message}`, { field: "saml.metadata_xml" });

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** https, or http on a loopback host (an SP under development): assertions are bearer tokens. */
function acsUrlAllowed(url: string): boolean {
  if (!url || url.length > MAX_URL || /[\s#]/.test(url) || !URL.canParse(url)) return false;
  const u = new URL(url);
  return u.protocol === "https:" || (u.protocol === "http:" && LOOPBACK.has(u.hostname));
}

function consumerServices(sp: EntityMetadata): AssertionConsumerService[] {
  const acs: AssertionConsumerService[] = [];
  for (const e of sp.endpoints("AssertionConsumerService")) {
    const index = Number(e.index);
    if (!SUPPORTED.has(e.binding)) continue;
    if (!acsUrlAllowed(e.location)) {
      throw bad(`ACS Location ${e.location.slice(0, 100)} must be an absolute https URL (http only on a loopback host), no fragment`);
    }
    if (e.index === undefined || !Number.isInteger(index) || index < 0 || index > 65535)
      throw bad("every AssertionConsumerService needs an index (0 to 65535)");
    acs.push({ url: e.location, binding: e.binding, index, isDefault: e.isDefault });
  }
  if (acs.length === 0) throw bad("no AssertionConsumerService with the HTTP-POST or HTTP-Redirect binding");
  if (acs.length > MAX_ACS) throw bad(`at most ${MAX_ACS} AssertionConsumerServices`);
  if (new Set(acs.map((a) => a.index)).size !== acs.length) throw bad("AssertionConsumerService indexes must be unique");
  return acs;
}

const MAX_SLO = 10;

/**
 * The SLO endpoints with a binding svc speaks (Artifact is left out), with URLs as strict as the ACS's: HTTP-Redirect
 * and HTTP-POST through the browser, SOAP from svc itself (soap-logout.ts; one with another URL is left out).
 */
function logoutServices(sp: EntityMetadata): SingleLogoutService[] {
  const out: SingleLogoutService[] = [];
  for (const e of sp.endpoints("SingleLogoutService")) {
    if (!SUPPORTED.has(e.binding) && e.binding !== BINDINGS.soap) continue;
    // Metadata with a SOAP endpoint svc would not call was accepted before svc spoke SOAP: it is left out, not refused.
    if (e.binding === BINDINGS.soap && !acsUrlAllowed(e.location)) continue;
    for (const u of [e.location, e.responseLocation]) {
      if (u !== undefined && !acsUrlAllowed(u)) {
        throw bad(`SingleLogoutService Location ${u.slice(0, 100)} must be an absolute https URL (http only on a loopback host), no fragment`);
      }
    }
    out.push({ binding: e.binding, url: e.location, ...(e.responseLocation ? { responseUrl: e.responseLocation } : {}) });
  }
  if (out.length > MAX_SLO) throw bad(`at most ${MAX_SLO} SingleLogoutServices`);
  return out;
}

/** The SLO endpoint a message through the browser goes to: HTTP-Redirect first (no page of ours in between), else HTTP-POST. */
export function chooseSlo(slo: readonly SingleLogoutService[] | undefined, prefer?: string): SingleLogoutService | undefined {
  const all = (slo ?? []).filter((s) => SUPPORTED.has(s.binding));
  return all.find((s) => s.binding === prefer) ?? all.find((s) => s.binding === BINDINGS.redirect) ?? all[0];
}

/** The SP's SOAP SingleLogoutService: where svc tells it of a session's end without a browser (the first one listed). */
export function soapSlo(slo: readonly SingleLogoutService[] | undefined): SingleLogoutService | undefined {
  return (slo ?? []).find((s) => s.binding === BINDINGS.soap);
}

/** Reads an EntityDescriptor with one SPSSODescriptor supporting SAML 2.0 (metadata.ts). */
export function parseSpMetadata(xml: Uint8Array): SpMetadata {
  const sp = readEntityMetadata(xml, {
    role: "SPSSODescriptor",
    maxBytes: MAX_METADATA_BYTES,
    errorId: "Errors.App.Saml.Metadata.Invalid",
    field: "saml.metadata_xml",
    bad,
  });
  const signed = attr(sp.role, "AuthnRequestsSigned");
  const authnRequestsSigned = signed === "true" || signed === "1";
  if (authnRequestsSigned && sp.signing.length === 0) throw bad("AuthnRequestsSigned is true but no signing certificate is given");
  const out: SpMetadata = { entityId: sp.entityId, acs: consumerServices(sp), signingCertificates: sp.signing, authnRequestsSigned, slo: logoutServices(sp) };
  if (sp.encryption[0]) out.encryptionCertificate = sp.encryption[0];
  return out;
}

/** The ACS a Response goes to: the one named by URL (exactly) and binding, or by index, or the default. */
export function chooseAcs(
  registered: readonly AssertionConsumerService[],
  asked: { url?: string; binding?: string; index?: number },
): AssertionConsumerService | undefined {
  if (asked.url !== undefined) {
    const byUrl = registered.filter((a) => a.url === asked.url);
    return asked.binding ? byUrl.find((a) => a.binding === asked.binding) : (byUrl.find((a) => a.binding === BINDINGS.post) ?? byUrl[0]);
  }
  if (asked.index !== undefined) return registered.find((a) => a.index === asked.index);
  return registered.find((a) => a.isDefault) ?? [...registered].sort((a, b) => a.index - b.index)[0];
}
