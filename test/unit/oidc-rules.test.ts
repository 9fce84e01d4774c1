// The pure rules of the authorization code flow: redirect URI matching (exact, RFC 8252 loopback ports for native
// apps), PKCE S256, at_hash, the authorization response's query, and when a sign-in satisfies a request.
import { createHash } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { errorCallback, successCallback, withQuery } from "../../src/domain/oauth/authorize/callback.js";
import { signInProblem } from "../../src/domain/oauth/authorize/finish.js";
import { challengeProblem, verifierMatches } from "../../src/domain/oauth/authorize/pkce.js";
import { matchesRedirectUri } from "../../src/domain/oauth/authorize/redirect-uri.js";
import { atHash } from "../../src/domain/oauth/id-token.js";

describe("redirect URI matching", () => {
  const registered = ["https://app.example.com/cb", "https://app.example.com/other?x=1"];
  it("accepts a registered URI exactly as registered", () => {
    for (const uri of registered) expect(matchesRedirectUri(registered, uri, "web")).toBe(true);
  });

  it.each([
    ["a character added", "https://app.example.com/cbx"],
    ["a character removed", "https://app.example.com/c"],
    ["a trailing slash", "https://app.example.com/cb/"],
    ["another port", "https://app.example.com:8443/cb"],
    ["the default port spelt out", "https://app.example.com:443/cb"],
    ["an added path segment", "https://app.example.com/cb/more"],
    ["an added query", "https://app.example.com/cb?next=/"],
    ["a changed query", "https://app.example.com/other?x=2"],
    ["another case", "https://APP.example.com/cb"],
    ["http instead of https", "http://app.example.com/cb"],
    ["a dot segment", "https://app.example.com/x/../cb"],
    ["an encoded character", "https://app.example.com/%63b"],
    ["a fragment", "https://app.example.com/cb#x"],
    ["userinfo", "https://evil@app.example.com/cb"],
  ])("refuses a near miss: %s", (_what, uri) => {
    expect(matchesRedirectUri(registered, uri, "web")).toBe(false);
    expect(matchesRedirectUri(registered, uri, "native")).toBe(false);
  });

  it("lets a native app's loopback IP redirect URI use any port (RFC 8252 §7.3), nothing else", () => {
    const native = ["http://127.0.0.1/callback", "http://[::1]:8080/cb?x=1", "com.example.app:/oauth"];
    expect(matchesRedirectUri(native, "http://127.0.0.1:53124/callback", "native")).toBe(true);
    expect(matchesRedirectUri(native, "http://127.0.0.1/callback", "native")).toBe(true);
    expect(matchesRedirectUri(native, "http://[::1]:1/cb?x=1", "native")).toBe(true);
    expect(matchesRedirectUri(native, "com.example.app:/oauth", "native")).toBe(true);
    // The path and query still match exactly, the host too (no 127.0.0.2, no localhost for an IP literal).
    expect(matchesRedirectUri(native, "http://127.0.0.1:53124/callback/", "native")).toBe(false);
    expect(matchesRedirectUri(native, "http://127.0.0.1:53124/callback?x=1", "native")).toBe(false);
    expect(matchesRedirectUri(native, "http://127.0.0.2:53124/callback", "native")).toBe(false);
    expect(matchesRedirectUri(native, "http://localhost:53124/callback", "native")).toBe(false);
    expect(matchesRedirectUri(native, "http://[::1]:8080/cb", "native")).toBe(false);
    expect(matchesRedirectUri(native, "http://127.0.0.1:0/callback", "native")).toBe(false);
    expect(matchesRedirectUri(native, "http://127.0.0.1:65536/callback", "native")).toBe(false);
    expect(matchesRedirectUri(native, "http://127.0.0.1:080/callback", "native")).toBe(false);
    expect(matchesRedirectUri(native, "https://127.0.0.1:53124/callback", "native")).toBe(false);
    // A web app's loopback URI (dev mode) matches exactly only.
    expect(matchesRedirectUri(["http://127.0.0.1:3000/cb"], "http://127.0.0.1:3001/cb", "web")).toBe(false);
  });
});

describe("PKCE", () => {
  const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
  const challenge = createHash("sha256").update(verifier).digest("base64url");

  it("verifies S256 (RFC 7636 appendix B)", () => {
    expect(challenge).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    expect(verifierMatches(challenge, verifier)).toBe(true);
    expect(verifierMatches(challenge, `${verifier.slice(0, -1)}l`)).toBe(false);
    expect(verifierMatches(challenge, "short")).toBe(false);
    expect(verifierMatches(challenge, `${verifier}!`)).toBe(false);
  });

  it("refuses plain, a missing method, malformed challenges, and no challenge where one is required", () => {
    expect(challengeProblem(challenge, "S256", true)).toBeUndefined();
    expect(challengeProblem(undefined, undefined, false)).toBeUndefined();
    expect(challengeProblem(challenge, "plain", false)).toMatch(/S256/);
    expect(challengeProblem(challenge, undefined, false)).toMatch(/S256/);
    expect(challengeProblem("too-short", "S256", false)).toMatch(/43/);
    expect(challengeProblem(undefined, "S256", false)).toMatch(/without code_challenge/);
    expect(challengeProblem(undefined, undefined, true)).toMatch(/required/);
  });
});

describe("at_hash", () => {
  it("is the base64url of the left half of the SHA-256 (OIDC Core §3.1.3.6)", () => {
    // The example of OIDC Core appendix A.3's access token.
    expect(atHash("jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y")).toBe("77QmUPtjPfzWtF2AnpK9RQ");
  });
});

describe("authorization responses", () => {
  it("adds the parameters to the registered URI as written, keeping its query", () => {
    expect(withQuery("https://a.example/cb", { code: "c", state: "s t" })).toBe("https://a.example/cb?code=c&state=s+t");
    expect(withQuery("https://a.example/cb?x=1", { code: "c" })).toBe("https://a.example/cb?x=1&code=c");
    expect(withQuery("http://127.0.0.1:80/cb", { code: "c" })).toBe("http://127.0.0.1:80/cb?code=c");
    expect(withQuery("https://a.example/cb", { state: undefined })).toBe("https://a.example/cb");
    const back = { redirectUri: "https://a.example/cb", state: "äö&=" };
    expect(new URL(successCallback(back, "abc", "https://issuer")).searchParams.get("state")).toBe("äö&=");
    const err = new URL(errorCallback(back, "access_denied", "no", "https://issuer"));
    expect(Object.fromEntries(err.searchParams)).toEqual({ error: "access_denied", error_description: "no", state: "äö&=", iss: "https://issuer" });
  });
});

describe("whether a sign-in satisfies the request", () => {
  const created = new Date("2026-01-01T10:00:00Z");
  const now = new Date("2026-01-01T10:05:00Z");
  const r = { hintUserId: null, prompt: [] as string[], maxAge: null as number | null, createdAt: created };
  it("prompt=login and max_age=0 need a factor checked since the request was made", () => {
    expect(signInProblem({ ...r, prompt: ["login"] }, "u", new Date(created.getTime() - 1), now)?.id).toBe("Errors.AuthRequest.ReauthenticationRequired");
    expect(signInProblem({ ...r, prompt: ["login"] }, "u", created, now)).toBeUndefined();
    expect(signInProblem({ ...r, maxAge: 0 }, "u", new Date(created.getTime() - 1), now)?.id).toBe("Errors.AuthRequest.ReauthenticationRequired");
  });
  it("max_age needs a factor checked at most that long ago", () => {
    expect(signInProblem({ ...r, maxAge: 60 }, "u", new Date(now.getTime() - 61_000), now)?.id).toBe("Errors.AuthRequest.ReauthenticationRequired");
    expect(signInProblem({ ...r, maxAge: 60 }, "u", new Date(now.getTime() - 60_000), now)).toBeUndefined();
  });
  it("an id_token_hint's user must be the one signed in", () => {
    expect(signInProblem({ ...r, hintUserId: "a" }, "b", now, now)?.id).toBe("Errors.AuthRequest.UserMismatch");
    expect(signInProblem({ ...r, hintUserId: "a" }, "a", now, now)).toBeUndefined();
  });
});
