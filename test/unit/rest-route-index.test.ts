// The REST route table's index (rules by their first two literal segments, src/http/rest/routes.ts) must pick the
// same rule as trying every rule in registration order, as findRoute did before it: checked over svc's own route
// table (every service of the API, stub handlers) with paths made from each template and near misses of them.
import type { DescMethodUnary } from "@bufbuild/protobuf";
import { createConnectRouter } from "@connectrpc/connect";
import { describe, expect, it } from "@jest/globals";
import { API_SERVICES } from "../../src/api/services.js";
import { compileRoutes, findRoute, type RouteTable } from "../../src/http/rest/routes.js";
import { fixtureServiceWith, RULES, type RuleInit } from "./transcoder-fixtures/fixture-service.js";

/** The same table without an index: findRoute then tries every rule, in registration order. */
const unindexed = (t: RouteTable): RouteTable => ({ ...t, byPrefix: new Map(), other: t.routes.map((route, order) => ({ route, order })) });

/** Paths of a template's requests and of wrong ones: variables filled, encoded segments, a verb, a segment more or less. */
function pathsOf(template: string): string[] {
  const filled = template.replace(/\{[^}]*\}/g, (v) => (v.includes("**") ? "a/b" : v.includes("/") ? "x/y" : "id-1"));
  return [
    filled,
    `${filled}/`,
    `${filled}/extra`,
    `${filled}:search`,
    filled.replace(/\/[^/]*$/, ""),
    filled.replace(/^\/v2\//, "/%76%32/"),
    filled.replace(/^\/v2\/([^/]+)/, "/v2/$1%2Fx"),
    filled.replace(/^\/v2\/([^/]+)/, "/v2/%E0%A4%A"),
    filled.replace(/^\/v2\/([^/]+)/, (_m, s: string) => `/v2/${encodeURIComponent(s).replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`)}`),
  ];
}

/** Every path under every method: the indexed table finds what the unindexed one finds; how many matched. */
function sameAsScanning(t: RouteTable, extra: string[]): number {
  const all = unindexed(t);
  const paths = new Set<string>(["/", "/v2", "/v2/", "/healthz", "v2/users", "//v2/users", "/v2/users/", "/v2/%zz/x", ...extra]);
  for (const r of t.routes) for (const p of pathsOf(r.template.template)) paths.add(p);
  let matched = 0;
  for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "PURGE"]) {
    for (const p of paths) {
      const indexed = findRoute(t, method, p);
      const scanned = findRoute(all, method, p);
      expect({ method, p, route: indexed?.route.template.template, vars: indexed?.vars }).toEqual({
        method,
        p,
        route: scanned?.route.template.template,
        vars: scanned?.vars,
      });
      expect(indexed?.route).toBe(scanned?.route);
      if (indexed) matched++;
    }
  }
  return matched;
}

describe("the REST route index", () => {
  it("indexes svc's rules and finds the rule and variables that trying every rule finds, for every template's paths and near misses", () => {
    const router = createConnectRouter();
    for (const service of API_SERVICES) router.service(service, {});
    const t = compileRoutes(router.handlers);
    expect(t.routes.length).toBeGreaterThan(100);
    expect([...t.byPrefix.values()].flat().length + t.other.length).toBe(t.routes.length);
    expect(sameAsScanning(t, [])).toBeGreaterThan(t.routes.length);
  });

  it("keeps registration order and specificity across indexed and unindexed rules (verbs, variables first, a catch-all)", () => {
    const rules: Record<string, RuleInit> = {
      CatchAll: { pattern: { case: "get", value: "/{name=**}" } },
      ...RULES,
      AnySpecial: { pattern: { case: "get", value: "/v1/{name}/special" } },
      SearchAgain: { pattern: { case: "get", value: "/v1/search" } },
      Trailing: { pattern: { case: "get", value: "/v1/" } },
    };
    const router = createConnectRouter();
    for (const m of fixtureServiceWith(rules).methods) router.rpc(m as DescMethodUnary, () => ({}));
    const t = compileRoutes(router.handlers);
    expect(t.other.length).toBeGreaterThanOrEqual(3);
    expect(t.byPrefix.size).toBeGreaterThanOrEqual(3);
    const extra = ["/v1/things/special", "/v1/other/special", "/v1/things/a:cancel", "/v1/shelves/s/books/b/c", "/v1/search", "/x/y/z", "/v1/"];
    expect(sameAsScanning(t, extra)).toBeGreaterThan(t.routes.length);
    // The catch-all, registered first, loses to every more specific rule and wins where none matches.
    expect(findRoute(t, "GET", "/v1/things/special")?.route.template.template).toBe("/v1/things/special");
    expect(findRoute(t, "GET", "/v1/other/special")?.route.template.template).toBe("/v1/{name}/special");
    expect(findRoute(t, "GET", "/x/y/z")?.route.template.template).toBe("/{name=**}");
  });
});
