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
  /** Resolves google.rpc (and our own) error detail types for decoding. */
  readonly registry: Registry;
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
  return { handlerCount: handlers.length, routes, registry: createRegistry(...files) };
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
  for (const route of table.routes) {
    if (route.httpMethod !== httpMethod && route.httpMethod !== "*") continue;
    const vars = matchPath(route.template, path);
    if (vars === undefined) continue;
    if (best === undefined || isBetter(route, best.route)) best = { route, vars };
  }
  return best;
}

/** Strictly better only, so that among equals the first registered rule wins. */
function isBetter(candidate: Route, current: Route): boolean {
  const bySpecificity = compareSpecificity(candidate.template, current.template);
  if (bySpecificity !== 0) return bySpecificity > 0;
  return candidate.httpMethod !== "*" && current.httpMethod === "*";
}
