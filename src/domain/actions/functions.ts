// The functions an execution can be set for, and how svc merges what their targets answer.
//  - preuserinfo: the user claims of ID tokens, of the userinfo endpoint and of introspection;
//  - preaccesstoken: the claims of JWT access tokens;
//  - presamlresponse: the attributes of SAML assertions.
// A target adds; it never changes or removes what svc says. A claim svc already set (or an earlier target did), a
// protocol claim (RFC 7519, OIDC Core, RFC 9068) and any urn:svc:iam: claim are refused, and the refusal is noted in
// the target's log claim, urn:svc:iam:action:<target name>:log (an array of strings), as are the target's own
// append_log_claims entries. SAML attributes svc sets (UserID, UserName, Email, ...) are kept likewise.

export const ACTION_FUNCTIONS = ["preuserinfo", "preaccesstoken", "presamlresponse"] as const;
export type ActionFunction = (typeof ACTION_FUNCTIONS)[number];

/** Claims that only svc sets: what a token is, for whom and from whom, and how the user signed in. */
const PROTOCOL_CLAIMS = new Set([
  "iss",
  "sub",
  "aud",
  "exp",
  "nbf",
  "iat",
  "jti",
  "azp",
  "nonce",
  "at_hash",
  "c_hash",
  "s_hash",
  "auth_time",
  "amr",
  "acr",
  "sid",
  "client_id",
  "scope",
  "cnf",
  "act",
  "may_act",
  "typ",
  "token_type",
  "active",
  "username",
  "events",
]);
const RESERVED_PREFIX = "urn:svc:iam:";
const MAX_KEY = 256;
const MAX_LOG_ENTRY = 1_000;
const MAX_LOG_ENTRIES = 50;

export const logClaim = (targetName: string) => `${RESERVED_PREFIX}action:${targetName}:log`;

/** One target's answer, as received (an object). */
export interface TargetAnswer {
  targetName: string;
  body: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function pushLog(claims: Record<string, unknown>, targetName: string, entry: string): void {
  const key = logClaim(targetName);
  const log = (claims[key] as string[] | undefined) ?? [];
  if (log.length >= MAX_LOG_ENTRIES) return;
  log.push(entry.slice(0, MAX_LOG_ENTRY));
  claims[key] = log;
}

/** `claims` with what the targets appended, in their order; `claims` itself is not changed. */
export function appendClaims(claims: Record<string, unknown>, answers: readonly TargetAnswer[]): Record<string, unknown> {
  const out: Record<string, unknown> = { ...claims };
  for (const { targetName, body } of answers) {
    const appended = body.append_claims;
    if (appended !== undefined && !Array.isArray(appended)) pushLog(out, targetName, "append_claims must be an array: ignored");
    for (const c of Array.isArray(appended) ? appended : []) {
      if (!isObject(c) || typeof c.key !== "string" || c.key === "" || c.key.length > MAX_KEY || !("value" in c) || c.value === undefined) {
        pushLog(out, targetName, "an entry of append_claims without a key (a string of 1 to 256 characters) and a value: ignored");
        continue;
      }
      // __proto__ would set the claims object's prototype, not a claim.
      if (PROTOCOL_CLAIMS.has(c.key) || c.key.startsWith(RESERVED_PREFIX) || c.key === "__proto__") {
        pushLog(out, targetName, `claim ${c.key} is reserved: not set`);
        continue;
      }
      if (Object.hasOwn(out, c.key)) {
        pushLog(out, targetName, `claim ${c.key} is already set: not changed`);
        continue;
      }
      out[c.key] = c.value;
    }
    const logs = body.append_log_claims;
    for (const entry of Array.isArray(logs) ? logs : []) if (typeof entry === "string") pushLog(out, targetName, entry);
  }
  return out;
}

export const SAML_NAME_FORMATS = {
  basic: "urn:oasis:names:tc:SAML:2.0:attrname-format:basic",
  uri: "urn:oasis:names:tc:SAML:2.0:attrname-format:uri",
  unspecified: "urn:oasis:names:tc:SAML:2.0:attrname-format:unspecified",
} as const;
const NAME_FORMATS = new Set<string>(Object.values(SAML_NAME_FORMATS));
const MAX_ATTRIBUTE_VALUES = 100;
const MAX_ATTRIBUTE_VALUE = 4_096;

export interface SamlAttribute {
  name: string;
  nameFormat: string;
  values: string[];
}

/**
 * The attributes the targets appended, after `taken` (the names svc sets): each with a name (1 to 256 characters), a
 * name_format (basic when absent) and one or more string values. What is refused is returned as notes for the log.
 */
export function appendedAttributes(taken: readonly string[], answers: readonly TargetAnswer[]): { attributes: SamlAttribute[]; notes: string[] } {
  const names = new Set(taken);
  const attributes: SamlAttribute[] = [];
  const notes: string[] = [];
  for (const { targetName, body } of answers) {
    const appended = body.append_attribute;
    for (const a of Array.isArray(appended) ? appended : []) {
      const nameFormat = isObject(a) && a.name_format !== undefined ? a.name_format : SAML_NAME_FORMATS.basic;
      const values = isObject(a) ? a.value : undefined;
      if (
        !isObject(a) ||
        typeof a.name !== "string" ||
        a.name === "" ||
        a.name.length > MAX_KEY ||
        typeof nameFormat !== "string" ||
        !NAME_FORMATS.has(nameFormat) ||
        !Array.isArray(values) ||
        values.length === 0 ||
        values.length > MAX_ATTRIBUTE_VALUES ||
        !values.every((v) => typeof v === "string" && v.length <= MAX_ATTRIBUTE_VALUE)
      ) {
        notes.push(`${targetName}: an entry of append_attribute needs a name, a SAML name_format and 1 to ${MAX_ATTRIBUTE_VALUES} string values: ignored`);
        continue;
      }
      if (names.has(a.name)) {
        notes.push(`${targetName}: attribute ${a.name} is already set: not changed`);
        continue;
      }
      names.add(a.name);
      attributes.push({ name: a.name, nameFormat, values: values as string[] });
    }
  }
  return { attributes, notes };
}
