// Bounds of what a session request stores besides its checks: metadata, the user agent and the lifetime. A session
// row is read on every sign-in step, so none of it may grow without limit.
import { invalidArgument } from "../errors.js";
import { MAX_INSTANT } from "../time.js";
import type { UserAgent } from "./model.js";

const MAX_METADATA_ENTRIES = 50;
const MAX_METADATA_BYTES = 64 * 1024;
const MAX_METADATA_KEY = 200;
const MAX_HEADERS = 50;
const MAX_USER_AGENT_BYTES = 16 * 1024;
const MAX_FIELD = 1000;
/** Ten years, the longest check lifetime of the login settings. */
export const MAX_LIFETIME_SECONDS = 87_600 * 3600;

/** Stored metadata: keys to base64 values. */
export type StoredMetadata = Record<string, string>;

/**
 * The metadata after a request: `changes` set their keys (an empty value removes the key) over `current`. Checked
 * against the bounds as a whole.
 */
export function mergeMetadata(current: StoredMetadata, changes: Record<string, Uint8Array>): StoredMetadata {
  const out: StoredMetadata = { ...current };
  for (const [key, value] of Object.entries(changes)) {
    if (!key || key.length > MAX_METADATA_KEY) {
      throw invalidArgument("Errors.Session.Metadata.KeyInvalid", `metadata keys must have 1 to ${MAX_METADATA_KEY} characters`, { field: "metadata" });
    }
    if (value.length === 0) delete out[key];
    else out[key] = Buffer.from(value).toString("base64");
  }
  const entries = Object.entries(out);
  const bytes = entries.reduce((n, [k, v]) => n + k.length + Math.ceil((v.length * 3) / 4), 0);
  if (entries.length > MAX_METADATA_ENTRIES || bytes > MAX_METADATA_BYTES) {
    throw invalidArgument(
      "Errors.Session.Metadata.LimitReached",
      `a session holds at most ${MAX_METADATA_ENTRIES} metadata entries and ${MAX_METADATA_BYTES} bytes`,
      { field: "metadata" },
    );
  }
  return out;
}

export function readMetadata(stored: unknown): StoredMetadata {
  if (!stored || typeof stored !== "object" || Array.isArray(stored)) return {};
  return Object.fromEntries(Object.entries(stored).filter((e): e is [string, string] => typeof e[1] === "string"));
}

export function checkUserAgent(ua: UserAgent): UserAgent {
  const field = (v: string | undefined, name: string) => {
    if (v !== undefined && v.length > MAX_FIELD)
      throw invalidArgument("Errors.Session.UserAgent.TooLong", `user_agent.${name} is too long`, { field: `user_agent.${name}` });
  };
  field(ua.fingerprintId, "fingerprint_id");
  field(ua.ip, "ip");
  field(ua.description, "description");
  if (Object.keys(ua.header).length > MAX_HEADERS || JSON.stringify(ua).length > MAX_USER_AGENT_BYTES) {
    throw invalidArgument("Errors.Session.UserAgent.TooLong", `user_agent holds at most ${MAX_HEADERS} headers and ${MAX_USER_AGENT_BYTES} bytes`, {
      field: "user_agent",
    });
  }
  return ua;
}

/** When a session of `seconds` from `now` ends. */
export function expiryOf(now: Date, seconds: number): Date {
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_LIFETIME_SECONDS) {
    throw invalidArgument("Errors.Session.Lifetime.Invalid", `lifetime must be more than 0 and at most ${MAX_LIFETIME_SECONDS} seconds`, { field: "lifetime" });
  }
  const at = new Date(now.getTime() + Math.round(seconds * 1000));
  return at > MAX_INSTANT ? MAX_INSTANT : at;
}
