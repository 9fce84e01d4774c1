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

function applyName(doc: ScimDoc, op: Op, sub: string | undefined, value: unknown): void {
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
}

/** The entries of one multi-valued attribute of a document, changed on copies and stored back with `set`. */
class MultiValue {
  readonly entries: Record<string, unknown>[];

  constructor(
    private readonly doc: ScimDoc,
    readonly attr: MultiAttr,
  ) {
    this.entries = ((doc[attr] as Record<string, unknown>[] | undefined) ?? []).map((e) => ({ ...e }));
  }

  set(next: Record<string, unknown>[]): void {
    // The domain's limit, checked per operation: thousands of operations must not each scan an ever longer list.
    if (next.length > MAX_CHILD_ROWS) throw invalidValue(`at most ${MAX_CHILD_ROWS} ${this.attr} entries`, `Errors.User.${this.attr}.TooMany`);
    if (next.length) this.doc[this.attr] = next;
    else delete this.doc[this.attr];
  }
}

/** add / replace of whole entries, without a filter or a sub-attribute. */
function putEntries(m: MultiValue, op: "add" | "replace", value: unknown): void {
  const incoming = (Array.isArray(value) ? value : [value]).map((v) => canonicalEntry(m.attr, v));
  if (op === "replace") {
    keepOnePrimary(incoming, incoming);
    m.set(incoming);
    return;
  }
  // RFC 7644 §3.5.2.1: adding a value the attribute already holds adds no second
  // copy; the sub-attributes sent are merged into the existing entry.
  const chosen: Record<string, unknown>[] = [];
  for (const entry of incoming) {
    const existing = m.entries.find((e) => sameEntry(m.attr, e, entry));
    if (existing) Object.assign(existing, entry);
    else m.entries.push(entry);
    chosen.push(existing ?? entry);
  }
  keepOnePrimary(m.entries, chosen);
  m.set(m.entries);
}

/** add / replace on the entries a filter selects (all without one), whole or one sub-attribute. */
function changeTargets(m: MultiValue, op: "add" | "replace", path: Path, value: unknown, targets: Record<string, unknown>[]): void {
  const { filter, sub } = path;
  if (targets.length === 0) {
    if (op === "replace" && filter) throw noTarget(`no ${m.attr} entry matches the filter`);
    // `add` through a filter creates the entry it describes (what Entra ID sends for a new work email).
    const created = sub ? { ...pinned(filter), [sub]: value } : { ...pinned(filter), ...canonicalEntry(m.attr, value) };
    const entry = canonicalEntry(m.attr, created);
    m.entries.push(entry);
    keepOnePrimary(m.entries, [entry]);
    m.set(m.entries);
    return;
  }
  for (const e of targets) {
    if (sub) {
      if (value === null) delete e[sub];
      else e[sub] = sub === "primary" ? toBool(value, `${m.attr}.primary`) : value;
    } else {
      const v = canonicalEntry(m.attr, value);
      if (op === "replace") {
        for (const k of Object.keys(e)) delete e[k];
      }
      Object.assign(e, v);
    }
  }
  keepOnePrimary(m.entries, targets);
  m.set(m.entries);
}

function applyMulti(doc: ScimDoc, op: Op, path: Path, value: unknown): void {
  const m = new MultiValue(doc, path.attr as MultiAttr);
  const { filter, sub } = path;
  const targets = filter ? m.entries.filter((e) => matches(e, filter)) : m.entries;
  if (op === "remove") {
    if (!sub) m.set(m.entries.filter((e) => !targets.includes(e)));
    else {
      for (const e of targets) delete e[sub];
      m.set(m.entries);
    }
  } else if (!filter && !sub) putEntries(m, op, value);
  else changeTargets(m, op, path, value, targets);
}

function applyOne(doc: ScimDoc, op: Op, path: Path, value: unknown): void {
  const { attr } = path;
  if ((SIMPLE_STRINGS as readonly string[]).includes(attr) || attr === "active") {
    if (op === "remove") delete doc[attr];
    else setSimple(doc, attr, value);
  } else if (attr === "name") applyName(doc, op, path.sub, value);
  else applyMulti(doc, op, path, value);
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
