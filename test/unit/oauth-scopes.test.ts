// Scope parsing and client authentication parsing: pure rules of the OAuth
// domain, no server.
import { describe, expect, it } from "@jest/globals";
import { DomainError } from "../../src/domain/errors.js";
import { readAssertion } from "../../src/domain/oauth/assertions.js";
import { basicCredentials, clientAuthMethod } from "../../src/domain/oauth/client-auth.js";
import { OAuthErrors } from "../../src/domain/oauth/errors.js";
import { grantAppScopes, keepKnownProjects, parseUserScopes, SCOPE_MANAGEMENT, scopeTokens, scopeValue } from "../../src/domain/oauth/scopes.js";

const errorOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return (e as DomainError).id;
  }
  return undefined;
};

describe("scopes", () => {
  const project = "urn:svc:iam:org:project:id:p1:aud";
  it("keeps known scopes once, project audiences and the user's own org; drops the rest", () => {
    const r = parseUserScopes(
      `openid openid profile bogus ${SCOPE_MANAGEMENT} ${project} urn:svc:iam:org:id:o1 urn:svc:iam:org:id:o2 urn:svc:iam:org:project:role:admin`,
      "o1",
    );
    expect(r.scopes).toEqual(["openid", "profile", SCOPE_MANAGEMENT, project, "urn:svc:iam:org:id:o1", "urn:svc:iam:org:project:role:admin"]);
    expect(r.projects).toEqual(["p1"]);
    expect(parseUserScopes(undefined, "o1")).toEqual({ scopes: [], projects: [] });
  });

  it("drops project audiences of unknown projects but never the management scope", () => {
    expect(keepKnownProjects([project, "urn:svc:iam:org:project:id:p2:aud", SCOPE_MANAGEMENT, "openid"], ["p1"])).toEqual([
      project,
      SCOPE_MANAGEMENT,
      "openid",
    ]);
  });

  it("an application's own token: its project and org scopes only, a fixed audience", () => {
    const g = grantAppScopes(`openid ${SCOPE_MANAGEMENT} ${project} urn:svc:iam:org:project:id:p2:aud urn:svc:iam:org:id:o1`, {
      clientId: "app@x",
      orgId: "o1",
      projectId: "p1",
    });
    expect(g).toEqual({ scopes: [project, "urn:svc:iam:org:id:o1"], audience: ["p1", "app@x"], projectIds: ["p1"] });
  });

  it("splits on spaces, at most 100 tokens; an empty grant has no scope member", () => {
    expect(scopeTokens(" a  b ")).toEqual(["a", "b"]);
    expect(scopeTokens(Array.from({ length: 150 }, (_, i) => `s${i}`).join(" "))).toHaveLength(100);
    expect(scopeValue([])).toBeUndefined();
    expect(scopeValue(["a", "b"])).toBe("a b");
  });
});

describe("client authentication parsing", () => {
  const basic = (s: string) => `Basic ${Buffer.from(s).toString("base64")}`;
  it("reads Basic credentials form-urlencoded (RFC 6749 §2.3.1)", () => {
    expect(basicCredentials(basic("my%20client:p%3Ass+w"))).toEqual({ clientId: "my client", secret: "p:ss w" });
    expect(basicCredentials(undefined)).toBeUndefined();
    expect(basicCredentials("Bearer x")).toBeUndefined();
    expect(errorOf(() => basicCredentials(basic("no-colon")))).toBe(OAuthErrors.InvalidClient);
    expect(errorOf(() => basicCredentials(basic("bad%:x")))).toBe(OAuthErrors.InvalidClient);
  });

  it("requires exactly one method", () => {
    const endpoint = "https://issuer/oauth/v2/token";
    const secret = { clientId: "c", secret: "s" };
    expect(clientAuthMethod({ basic: secret, form: {}, endpoint })).toBe("client_secret_basic");
    expect(clientAuthMethod({ form: { client_id: "c", client_secret: "s" }, endpoint })).toBe("client_secret_post");
    expect(clientAuthMethod({ form: { client_assertion: "x" }, endpoint })).toBe("private_key_jwt");
    expect(errorOf(() => clientAuthMethod({ form: {}, endpoint }))).toBe(OAuthErrors.InvalidClient);
    expect(errorOf(() => clientAuthMethod({ basic: secret, form: { client_secret: "s" }, endpoint }))).toBe(OAuthErrors.InvalidRequest);
  });

  it("reads an assertion's kid and claims, refusing anything but RS256 with a kid", () => {
    const jws = (header: object, claims: object) =>
      `${Buffer.from(JSON.stringify(header)).toString("base64url")}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.sig`;
    expect(readAssertion(jws({ alg: "RS256", kid: "k" }, { iss: "a" }))).toEqual({ kid: "k", claims: { iss: "a" } });
    expect(readAssertion(jws({ alg: "HS256", kid: "k" }, {}))).toBeUndefined();
    expect(readAssertion(jws({ alg: "RS256" }, {}))).toBeUndefined();
    expect(readAssertion(jws({ alg: "RS256", kid: "k" }, [1]))).toBeUndefined();
    expect(readAssertion("garbage")).toBeUndefined();
  });
});
