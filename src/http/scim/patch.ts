// PATCH (RFC 7644 §3.5.2) applied to a copy of the current resource: add,
// replace and remove (op names case-insensitive), with and without path, on
// simple, complex and multi-valued attributes, sub-attributes and value-
// filtered paths; Entra ID's path-less values with dotted keys and "True"/
// "False" strings. The result is stored as a whole by replaceScimUser.
import { MAX_CHILD_ROWS } from "../../domain/identity/users.js";
import { ScimError } from "./errors.js";
import { attrPath, type Filter, parseFilter } from "./filter.js";
import { ADDRESS_SUBS, invalidValue, MULTI, type MultiAttr, READ_ONLY, type ScimDoc, SIMPLE_STRINGS, SUB_NAMES, toBool, topName } from "./resource.js";

export const PATCH_URN = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

type Op = "add" | "replace" | "remove";

interface Path {
  attr: string;
  filter?: Filter;
  sub?: string;
}

const invalidPath = (detail: string) => new ScimError(400, "invalidPath", "Errors.Scim.Patch.InvalidPath", detail);
const noTarget = (detail: string) => new ScimError(400, "noTarget", "Errors.Scim.Patch.NoTarget", detail);
const mutability = (attr: string) => new ScimError(400, "mutability", "Errors.Scim.Patch.Immutable", `'${attr}' cannot be modified`);

const CORE_URN = "urn:ietf:params:scim:schemas:core:2.0:user:";

/** Parses `attr`, `attr.sub`, `attr[filter]` or `attr[filter].sub` (core schema URN prefix allowed). */
export function parsePath(raw: string): Path {
  let p = raw.trim();
  if (p.toLowerCase().startsWith(CORE_URN)) p = p.slice(CORE_URN.length);
  const bracket = p.indexOf("[");
  let head = p;
  let filter: Filter | undefined;
  let tail: string | undefined;
  if (bracket >= 0) {
    const close = p.lastIndexOf("]");
    if (close < bracket) throw invalidPath(`'${raw}' is not a valid path`);
    head = p.slice(0, bracket);
    try {
      filter = parseFilter(p.slice(bracket + 1, close));
    } catch {
      throw invalidPath(`'${raw}' has an invalid value filter`);
    }
    const rest = p.slice(close + 1);
    if (rest && !rest.startsWith(".")) throw invalidPath(`'${raw}' is not a valid path`);
    tail = rest ? rest.slice(1) : undefined;
  }
  let dotted: string;
  try {
    dotted = attrPath(head);
  } catch {
    throw invalidPath(`'${raw}' is not a valid path`);
  }
  const [first, second] = dotted.split(".") as [string, string | undefined];
  if (second !== undefined && tail !== undefined) throw invalidPath(`'${raw}' is not a valid path`);
  if (READ_ONLY.some((r) => r.toLowerCase() === first.toLowerCase())) throw mutability(first);
  const attr = topName(first);
  if (!attr) throw invalidPath(`unknown attribute '${first}'`);
  const subRaw = second ?? tail;
  let sub: string | undefined;
  if (subRaw !== undefined) {
    sub = SUB_NAMES[attr]?.get(subRaw.toLowerCase());
    if (!sub) throw invalidPath(`unknown attribute '${attr}.${subRaw}'`);
  }
  if (filter && !(attr in MULTI)) throw invalidPath(`'${attr}' is not multi-valued`);
  return { attr, ...(filter ? { filter } : {}), ...(sub ? { sub } : {}) };
}

/** Evaluates a value filter against one entry of a multi-valued attribute (case-insensitive strings). */
function matches(entry: Record<string, unknown>, f: Filter): boolean {
  switch (f.kind) {
    case "and":
      return matches(entry, f.left) && matches(entry, f.right);
    case "or":
      return matches(entry, f.left) || matches(entry, f.right);
    case "not":
      return !matches(entry, f.filter);
    case "valuePath":
      return false;
    case "present": {
      const v = entry[f.attr];
      return v !== undefined && v !== null && v !== "";
    }
    case "compare": {
      let v = entry[f.attr];
      if (f.attr === "primary" && v === undefined) v = false;
      let want = f.value;
      if (typeof v === "string" && typeof want === "string") {
        const a = v.toLowerCase();
        const b = want.toLowerCase();
        switch (f.op) {
          case "eq":
            return a === b;
          case "ne":
            return a !== b;
          case "co":
            return a.includes(b);
          case "sw":
            return a.startsWith(b);
          case "ew":
            return a.endsWith(b);
          case "gt":
            return a > b;
          case "ge":
            return a >= b;
          case "lt":
            return a < b;
          case "le":
            return a <= b;
        }
      }
      if (typeof v === "boolean" && typeof want === "string" && /^(true|false)$/i.test(want)) want = want.toLowerCase() === "true";
      if (f.op === "eq") return v === want;
      if (f.op === "ne") return v !== want;
      return false;
    }
  }
}

/** The sub-attribute values a filter pins with `eq` (used to create the entry an Entra `add` aims at). */
function pinned(f: Filter | undefined): Record<string, unknown> {
  if (!f) return {};
  if (f.kind === "compare" && f.op === "eq") return { [f.attr]: f.value };
  if (f.kind === "and") return { ...pinned(f.left), ...pinned(f.right) };
  return {};
}

function canonicalEntry(attr: string, value: unknown): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidValue(`entries of ${attr} must be objects`);
  const names = SUB_NAMES[attr] as Map<string, string>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const name = names.get(k.toLowerCase());
    if (name) out[name] = name === "primary" ? toBool(v, `${attr}.primary`) : v;
  }
  return out;
}

/** Setting a new primary demotes the old one (RFC 7643 §2.4: at most one primary). */
function keepOnePrimary(entries: Record<string, unknown>[], chosen: Record<string, unknown>[]): void {
  const winner = [...chosen].reverse().find((e) => e.primary === true);
  if (!winner) return;
  for (const e of entries) if (e !== winner && e.primary === true) e.primary = false;
}

/** Whether two entries of a multi-valued attribute hold the same value (emails compare case-insensitively). */
function sameEntry(attr: MultiAttr, a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  if (attr === "addresses") {
    return ADDRESS_SUBS.every((k) => k === "primary" || (a[k] ?? null) === (b[k] ?? null));
  }
  if (typeof a.value !== "string" || typeof b.value !== "string") return false;
  return attr === "emails" ? a.value.toLowerCase() === b.value.toLowerCase() : a.value === b.value;
}

function setSimple(doc: ScimDoc, attr: string, value: unknown): void {
  if (attr === "active") {
    doc.active = toBool(value, "active");
    return;
  }
  if (value === null) {
    delete doc[attr];
    return;
  }
  if (typeof value !== "string") throw invalidValue(`${attr} must be a string`);
  doc[attr] = value;
}

function applyOne(doc: ScimDoc, op: Op, path: Path, value: unknown): void {
  const { attr, filter, sub } = path;
  if ((SIMPLE_STRINGS as readonly string[]).includes(attr) || attr === "active") {
    if (op === "remove") delete doc[attr];
    else setSimple(doc, attr, value);
    return;
  }
  if (attr === "name") {
    const name = { ...((doc.name as Record<string, unknown> | undefined) ?? {}) };
    if (sub) {
      if (op === "remove" || value === null) delete name[sub];
      else if (typeof value !== "string") throw invalidValue(`name.${sub} must be a string`);
      else name[sub] = value;
    } else if (op === "remove") {
      delete doc.name;
      return;
    } else {
      // A complex value replaces the sub-attributes it names and leaves the others (RFC 7644 §3.5.2.3).
      for (const [k, v] of Object.entries(canonicalEntry("name", value))) {
        if (v === null) delete name[k];
        else name[k] = v;
      }
    }
    doc.name = name;
    return;
  }
  const multi = attr as MultiAttr;
  const entries = ((doc[multi] as Record<string, unknown>[] | undefined) ?? []).map((e) => ({ ...e }));
  const set = (next: Record<string, unknown>[]) => {
    // The domain's limit, checked per operation: thousands of operations must not each scan an ever longer list.
    if (next.length > MAX_CHILD_ROWS) throw invalidValue(`at most ${MAX_CHILD_ROWS} ${multi} entries`, `Errors.User.${multi}.TooMany`);
    if (next.length) doc[multi] = next;
    else delete doc[multi];
  };
  const targets = filter ? entries.filter((e) => matches(e, filter)) : entries;

  if (op === "remove") {
    if (!sub) set(entries.filter((e) => !targets.includes(e)));
    else {
      for (const e of targets) delete e[sub];
      set(entries);
    }
    return;
  }
  if (!filter && !sub) {
    const incoming = (Array.isArray(value) ? value : [value]).map((v) => canonicalEntry(multi, v));
    if (op === "replace") {
      keepOnePrimary(incoming, incoming);
      set(incoming);
      return;
    }
    // RFC 7644 §3.5.2.1: adding a value the attribute already holds adds no second
    // copy; the sub-attributes sent are merged into the existing entry.
    const chosen: Record<string, unknown>[] = [];
    for (const entry of incoming) {
      const existing = entries.find((e) => sameEntry(multi, e, entry));
      if (existing) Object.assign(existing, entry);
      else entries.push(entry);
      chosen.push(existing ?? entry);
    }
    keepOnePrimary(entries, chosen);
    set(entries);
    return;
  }
  if (targets.length === 0) {
    if (op === "replace" && filter) throw noTarget(`no ${multi} entry matches the filter`);
    // `add` through a filter creates the entry it describes (what Entra ID sends for a new work email).
    const created = sub ? { ...pinned(filter), [sub]: value } : { ...pinned(filter), ...canonicalEntry(multi, value) };
    const entry = canonicalEntry(multi, created);
    entries.push(entry);
    keepOnePrimary(entries, [entry]);
    set(entries);
    return;
  }
  for (const e of targets) {
    if (sub) {
      if (value === null) delete e[sub];
      else e[sub] = sub === "primary" ? toBool(value, `${multi}.primary`) : value;
    } else {
      const v = canonicalEntry(multi, value);
      if (op === "replace") {
        for (const k of Object.keys(e)) delete e[k];
      }
      Object.assign(e, v);
    }
  }
  keepOnePrimary(entries, targets);
  set(entries);
}

const EXTENSION_PREFIX = "urn:ietf:params:scim:schemas:extension:";
const isExtension = (path: string) => path.toLowerCase().startsWith(EXTENSION_PREFIX);

/** Applies a PatchOp body's Operations to `doc` (a copy is changed and returned). */
export function applyPatch(current: ScimDoc, operations: unknown): ScimDoc {
  if (!Array.isArray(operations) || operations.length === 0) {
    throw new ScimError(400, "invalidSyntax", "Errors.Scim.Patch.NoOperations", "Operations must be a non-empty array");
  }
  const doc = structuredClone(current);
  for (const raw of operations) {
    if (typeof raw !== "object" || raw === null) throw new ScimError(400, "invalidSyntax", "Errors.Scim.Patch.Operation", "each operation is an object");
    const o = raw as { op?: unknown; path?: unknown; value?: unknown };
    const op = typeof o.op === "string" ? o.op.toLowerCase() : "";
    if (op !== "add" && op !== "replace" && op !== "remove") throw invalidValue(`unknown operation '${String(o.op)}'`, "Errors.Scim.Patch.UnknownOp");
    if (o.path !== undefined && typeof o.path !== "string") throw invalidPath("path must be a string");
    const path = o.path?.trim();
    // Schema extensions (e.g. the enterprise User of Entra ID's default mapping) are not
    // stored: like POST and PUT, which ignore their attributes, PATCH leaves them alone.
    if (path && isExtension(path)) continue;
    if (!path) {
      if (op === "remove") throw noTarget("remove needs a path");
      if (typeof o.value !== "object" || o.value === null || Array.isArray(o.value)) throw invalidValue("an operation without path takes an object value");
      // Keys may be attribute paths themselves ("name.givenName", as Entra ID sends them).
      for (const [k, v] of Object.entries(o.value)) if (!isExtension(k)) applyOne(doc, op, parsePath(k), v);
      continue;
    }
    if (op !== "remove" && o.value === undefined) throw invalidValue(`${op} needs a value`);
    applyOne(doc, op, parsePath(path), o.value);
  }
  return doc;
}
