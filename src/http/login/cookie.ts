// The browser's state: one HttpOnly, SameSite=Lax cookie holding this browser's sessions (their ids and tokens; a
// browser may hold several users' sessions) and the secret its CSRF tokens derive from. Sealed with the master key
// (AES-256-GCM): the browser can neither read the session tokens in it nor forge or alter it.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Sealer } from "../../domain/identity/authn/ports.js";

export interface BrowserSession {
  id: string;
  token: string;
  userId?: string;
  loginName?: string;
  /** Made before any factor succeeded (short-lived until one does). */
  pending?: boolean;
}

export interface BrowserState {
  /** base64url of 32 random bytes: the CSRF tokens of this browser are HMACs keyed with it. */
  csrf: string;
  /** Newest first. */
  sessions: BrowserSession[];
}

/** A browser keeps this many sessions at most; the oldest goes first. */
export const MAX_SESSIONS = 8;
const MAX_AGE_SECONDS = 90 * 24 * 3600;
const AAD = "svc:login-cookie:v1";

export interface CookieJar {
  name: string;
  read(header: string | undefined): BrowserState | undefined;
  /** The Set-Cookie value for `state`. */
  write(state: BrowserState): string;
  /** The Set-Cookie value that removes the cookie. */
  clear(): string;
}

export const freshState = (): BrowserState => ({ csrf: randomBytes(32).toString("base64url"), sessions: [] });

function parseCookies(header: string | undefined, name: string): string | undefined {
  if (!header || header.length > 16_384) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

const isSession = (s: unknown): s is BrowserSession => {
  const o = s as BrowserSession;
  return (
    typeof o === "object" &&
    o !== null &&
    typeof o.id === "string" &&
    typeof o.token === "string" &&
    (o.userId === undefined || typeof o.userId === "string") &&
    (o.loginName === undefined || typeof o.loginName === "string") &&
    (o.pending === undefined || typeof o.pending === "boolean")
  );
};

/** `secure`: the external URL is https; then the cookie is Secure and __Host- prefixed (no Domain, Path=/). */
export function cookieJar(sealer: Sealer, secure: boolean): CookieJar {
  const name = secure ? "__Host-svc-login" : "svc-login";
  const attributes = `Path=/; HttpOnly; SameSite=Lax${secure ? "; Secure" : ""}`;
  return {
    name,
    read(header) {
      const value = parseCookies(header, name);
      if (!value || value.length > 8_192) return undefined;
      try {
        const parsed = JSON.parse(sealer.open(Buffer.from(value, "base64url"), AAD).toString("utf8")) as BrowserState;
        if (typeof parsed.csrf !== "string" || parsed.csrf.length !== 43 || !Array.isArray(parsed.sessions)) return undefined;
        return { csrf: parsed.csrf, sessions: parsed.sessions.filter(isSession).slice(0, MAX_SESSIONS) };
      } catch {
        // Altered, sealed with another key, or not ours: a browser with no state.
        return undefined;
      }
    },
    write(state) {
      const sealed = Buffer.from(sealer.seal(Buffer.from(JSON.stringify({ ...state, sessions: state.sessions.slice(0, MAX_SESSIONS) })), AAD));
      return `${name}=${sealed.toString("base64url")}; ${attributes}; Max-Age=${MAX_AGE_SECONDS}`;
    },
    clear: () => `${name}=; ${attributes}; Max-Age=0`,
  };
}

/** The CSRF token of a form: bound to this browser's secret and to the form's purpose. */
export function csrfToken(state: BrowserState, purpose = "form"): string {
  return createHmac("sha256", Buffer.from(state.csrf, "base64url")).update(purpose).digest("base64url");
}

export function validCsrf(state: BrowserState | undefined, token: unknown, purpose = "form"): boolean {
  if (!state || typeof token !== "string") return false;
  // Bytes, not characters: 43 characters of which one is not ASCII are more than 43 bytes (timingSafeEqual would throw).
  const expected = Buffer.from(csrfToken(state, purpose));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(expected, given);
}

/** The state with `s` as the newest session (replacing an older entry of the same session or user). */
export function withSession(state: BrowserState, s: BrowserSession): BrowserState {
  const others = state.sessions.filter((x) => x.id !== s.id && (s.userId === undefined || x.userId !== s.userId));
  return { ...state, sessions: [s, ...others].slice(0, MAX_SESSIONS) };
}

/** The state with a new CSRF secret: forms rendered before it no longer post. */
export const withNewCsrf = (state: BrowserState): BrowserState => ({ ...state, csrf: randomBytes(32).toString("base64url") });

export function withoutSession(state: BrowserState, id: string): BrowserState {
  return { ...state, sessions: state.sessions.filter((x) => x.id !== id) };
}
