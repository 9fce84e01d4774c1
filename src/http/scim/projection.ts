// attributes / excludedAttributes (RFC 7644 §3.9) over top-level attributes
// and one level of sub-attributes.
import { listParam } from "./exchange.js";
import { type ScimDoc, USER_URN } from "./resource.js";

export interface Projection {
  attributes?: string[];
  excludedAttributes?: string[];
}

const CORE_PREFIX = `${USER_URN.toLowerCase()}:`;
const ALWAYS = new Set(["schemas", "id", "meta"]);

const norm = (names: string[]) => names.map((n) => (n.toLowerCase().startsWith(CORE_PREFIX) ? n.slice(CORE_PREFIX.length) : n).toLowerCase());

/** The sub-attribute names of `key` among `names` (`emails.value` → `value`). */
const subsOf = (names: string[], key: string) => names.filter((n) => n.startsWith(`${key}.`)).map((n) => n.slice(key.length + 1));

/** A complex value or every entry of a multi-valued one, reduced to the sub-attributes `keep` accepts. */
function reduce(v: object, keep: (sub: string) => boolean): unknown {
  const one = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([sk]) => keep(sk.toLowerCase())));
  return Array.isArray(v) ? v.map((e) => one(e as Record<string, unknown>)) : one(v as Record<string, unknown>);
}

function pick(resource: ScimDoc, attributes: string[]): ScimDoc {
  const wanted = norm(attributes);
  const out: ScimDoc = {};
  for (const [k, v] of Object.entries(resource)) {
    const key = k.toLowerCase();
    if (ALWAYS.has(k) || wanted.includes(key)) out[k] = v;
    else {
      const subs = subsOf(wanted, key);
      if (subs.length && typeof v === "object" && v !== null) out[k] = reduce(v, (s) => subs.includes(s));
    }
  }
  return out;
}

function omit(resource: ScimDoc, excluded: string[]): ScimDoc {
  const dropped = norm(excluded);
  const out: ScimDoc = {};
  for (const [k, v] of Object.entries(resource)) {
    const key = k.toLowerCase();
    if (!ALWAYS.has(k) && dropped.includes(key)) continue;
    // A sub-attribute (`name.givenName`, `emails.display`) is dropped from the complex value or from every entry.
    const subs = ALWAYS.has(k) ? [] : subsOf(dropped, key);
    out[k] = subs.length && typeof v === "object" && v !== null ? reduce(v, (s) => !subs.includes(s)) : v;
  }
  return out;
}

export function project(resource: ScimDoc, p: Projection): ScimDoc {
  if (p.attributes?.length) return pick(resource, p.attributes);
  if (p.excludedAttributes?.length) return omit(resource, p.excludedAttributes);
  return resource;
}

export function projection(q: Record<string, unknown>): Projection {
  return { attributes: listParam(q.attributes, "attributes"), excludedAttributes: listParam(q.excludedAttributes, "excludedAttributes") };
}
