// The route table: each google.api.http rule of the router's handlers compiled once (path template, bound variables,
// body mapping), and the most specific rule matching a request.
import { createRegistry, type DescField, type DescFile, type DescMessage, getOption, hasOption, type Registry } from "@bufbuild/protobuf";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { http } from "../../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../../gen/google/api/http_pb.js";
import { file_google_rpc_error_details } from "../../../gen/google/rpc/error_details_pb.js";
import { findField, isTextual, type Leaf, leafOf, resolveFieldPath } from "./fields.js";
import { compareSpecificity, matchPath, type PathTemplate, parsePathTemplate } from "./path-template.js";

export type BodyMapping = { readonly kind: "none" } | { readonly kind: "all" } | { readonly kind: "field"; readonly field: DescField };

interface PathBinding {
  readonly fieldPath: string;
  readonly fields: readonly DescField[];
  readonly leaf: Leaf;
}

export interface Route {
  /** Upper-case HTTP method, or "*" for a custom rule that accepts any. */
  readonly httpMethod: string;
  readonly template: PathTemplate;
  readonly handler: UniversalHandler;
  readonly bindings: readonly PathBinding[];
  readonly body: BodyMapping;
  readonly responseField: DescField | undefined;
}

export interface RouteTable {
  readonly handlerCount: number;
  readonly routes: readonly Route[];
  /**
   * The routes by their first two path segments where both are literals (no verb: it would change the last raw
   * segment before the match), each list in registration order; `other` holds every other route. A path can only
   * match a route of its own two segments' list or of `other`, so findRoute tries those instead of all ~150 rules.
   */
  readonly byPrefix: ReadonlyMap<string, readonly IndexedRoute[]>;
  readonly other: readonly IndexedRoute[];
  /** Resolves google.rpc (and our own) error detail types for decoding. */
  readonly registry: Registry;
}

/** A route and its place in registration order (which breaks ties between equally specific rules). */
export interface IndexedRoute {
  readonly route: Route;
  readonly order: number;
}

export function compileRoutes(handlers: readonly UniversalHandler[]): RouteTable {
  const routes: Route[] = [];
  const files = new Set<DescFile>([file_google_rpc_error_details]);
  for (const handler of handlers) {
    collectFiles(handler.service.file, files);
    if (!hasOption(handler.method, http)) continue;
    const rule = getOption(handler.method, http);
    for (const binding of [rule, ...rule.additionalBindings]) routes.push(compileRule(handler, binding));
  }
  const byPrefix = new Map<string, IndexedRoute[]>();
  const other: IndexedRoute[] = [];
  routes.forEach((route, order) => {
    const key = prefixKey(route.template);
    if (key === undefined) other.push({ route, order });
    else byPrefix.set(key, [...(byPrefix.get(key) ?? []), { route, order }]);
  });
  return { handlerCount: handlers.length, routes, registry: createRegistry(...files), byPrefix, other };
}

/** "<first>/<second>" when a template's first two segments are literals and it has no verb; otherwise undefined. */
function prefixKey(t: PathTemplate): string | undefined {
  const [a, b] = t.segments;
  if (t.verb !== undefined || a?.kind !== "literal" || b?.kind !== "literal") return undefined;
  return `${a.value}/${b.value}`;
}

function collectFiles(file: DescFile, into: Set<DescFile>): void {
  if (into.has(file)) return;
  into.add(file);
  for (const dep of file.dependencies) collectFiles(dep, into);
}

/** Turns one HttpRule into a route; a rule the protos get wrong fails start-up. */
function compileRule(handler: UniversalHandler, rule: HttpRule): Route {
  const method = handler.method;
  const fail = (why: string): never => {
    throw new Error(`google.api.http rule of ${method.parent.typeName}.${method.name}: ${why}`);
  };
  if (method.methodKind !== "unary") fail("only unary methods can be transcoded");
  const { httpMethod, path } = patternOf(rule) ?? fail("no HTTP method and path");
  const template = parseOrFail(path, fail);
  const bindings = template.variables.map((v) => bindVariable(method.input, v.fieldPath, fail));
  return {
    httpMethod,
    template,
    handler,
    bindings,
    body: bodyMapping(method.input, rule.body, fail),
    responseField:
      rule.responseBody === ""
        ? undefined
        : (findField(method.output, rule.responseBody) ?? fail(`response_body "${rule.responseBody}" is not a field of ${method.output.typeName}`)),
  };
}

function parseOrFail(path: string, fail: (why: string) => never): PathTemplate {
  try {
    return parsePathTemplate(path);
  } catch (e) {
    return fail(e instanceof Error ? e.message : String(e));
  }
}

function patternOf(rule: HttpRule): { httpMethod: string; path: string } | undefined {
  const { pattern } = rule;
  switch (pattern.case) {
    case undefined:
      return undefined;
    case "custom":
      return { httpMethod: pattern.value.kind.toUpperCase(), path: pattern.value.path };
    default:
      return { httpMethod: pattern.case.toUpperCase(), path: pattern.value };
  }
}

function bindVariable(input: DescMessage, fieldPath: string, fail: (why: string) => never): PathBinding {
  const fields = resolveFieldPath(input, fieldPath);
  if (typeof fields === "string") return fail(`path variable "${fieldPath}": ${fields}`);
  const field = fields[fields.length - 1];
  const leaf = leafOf(field);
  if (field.fieldKind === "list" || leaf === undefined || !isTextual(leaf)) {
    return fail(`path variable "${fieldPath}" must be a singular primitive field`);
  }
  return { fieldPath, fields, leaf };
}

function bodyMapping(input: DescMessage, body: string, fail: (why: string) => never): BodyMapping {
  if (body === "") return { kind: "none" };
  if (body === "*") return { kind: "all" };
  const field = findField(input, body) ?? fail(`body "${body}" is not a field of ${input.typeName}`);
  return { kind: "field", field };
}

export function findRoute(table: RouteTable, httpMethod: string, path: string): { route: Route; vars: Record<string, string> } | undefined {
  let best: { route: Route; vars: Record<string, string> } | undefined;
  for (const route of candidates(table, path)) {
    if (route.httpMethod !== httpMethod && route.httpMethod !== "*") continue;
    const vars = matchPath(route.template, path);
    if (vars === undefined) continue;
    if (best === undefined || isBetter(route, best.route)) best = { route, vars };
  }
  return best;
}

/**
 * The routes `path` may match, in registration order: those indexed under its first two segments (decoded, as
 * matchPath compares literals) and the unindexed ones. A literal never holds "/", so a decoded segment that does can
 * match no indexed route; a segment that does not decode matches no literal either (matchPath answers undefined).
 */
function candidates(table: RouteTable, path: string): Iterable<Route> {
  if (!path.startsWith("/")) return table.routes;
  const second = path.indexOf("/", 1);
  let key: string | undefined;
  if (second !== -1) {
    const third = path.indexOf("/", second + 1);
    try {
      const a = decodeURIComponent(path.slice(1, second));
      const b = decodeURIComponent(path.slice(second + 1, third === -1 ? undefined : third));
      if (!a.includes("/") && !b.includes("/")) key = `${a}/${b}`;
    } catch (e) {
      if (!(e instanceof URIError)) throw e;
    }
  }
  const indexed = key === undefined ? undefined : table.byPrefix.get(key);
  if (indexed === undefined) return table.other.map((r) => r.route);
  // Both lists are in registration order: merge them.
  const out: Route[] = [];
  let i = 0;
  let j = 0;
  const { other } = table;
  while (i < indexed.length || j < other.length) {
    const x = indexed[i];
    const y = other[j];
    if (y === undefined || (x !== undefined && x.order < y.order)) {
      out.push((x as IndexedRoute).route);
      i++;
    } else {
      out.push(y.route);
      j++;
    }
  }
  return out;
}

/** Strictly better only, so that among equals the first registered rule wins. */
function isBetter(candidate: Route, current: Route): boolean {
  const bySpecificity = compareSpecificity(candidate.template, current.template);
  if (bySpecificity !== 0) return bySpecificity > 0;
  return candidate.httpMethod !== "*" && current.httpMethod === "*";
}
