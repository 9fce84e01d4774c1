// An application's login base URL names only allowed origins (issue 23, finding 13d): SVC_LOGIN_UI_ALLOWED_ORIGINS and
// the rule of the application settings.
import { describe, expect, it } from "@jest/globals";
import { loadConfig } from "../../src/config.js";
import { validateSettings } from "../../src/domain/access/app-settings.js";

const oidcApp = (loginBaseUrl: string) => ({
  kind: "oidc" as const,
  redirectUris: ["https://rp.example.com/cb"],
  postLogoutRedirectUris: [],
  grantTypes: [],
  responseTypes: [],
  idTokenRoleAssertion: false,
  idTokenUserinfoAssertion: false,
  devMode: false,
  loginBaseUrl,
});

const reason = (f: () => unknown) => {
  try {
    f();
    return undefined;
  } catch (err) {
    return (err as { id: string }).id;
  }
};

describe("SVC_LOGIN_UI_ALLOWED_ORIGINS", () => {
  it("takes comma-separated origins, none by default", () => {
    expect(loadConfig({}).loginUiAllowedOrigins).toEqual([]);
    expect(loadConfig({ SVC_LOGIN_UI_ALLOWED_ORIGINS: " https://login.example.com, http://127.0.0.1:3000/ " }).loginUiAllowedOrigins).toEqual([
      "https://login.example.com",
      "http://127.0.0.1:3000",
    ]);
  });

  it("refuses anything but an origin", () => {
    for (const bad of ["https://login.example.com/path", "login.example.com", "ftp://x.example.com", "https://user@x.example.com"]) {
      expect(() => loadConfig({ SVC_LOGIN_UI_ALLOWED_ORIGINS: bad })).toThrow(/SVC_LOGIN_UI_ALLOWED_ORIGINS takes origins/);
    }
  });
});

describe("an application's login base URL", () => {
  const allowed = ["https://iam.example.com", "https://login.example.com"];

  it("may name an allowed origin, with any path and query", () => {
    const v = validateSettings(oidcApp("https://login.example.com/signin?brand=x"), allowed);
    expect(v.config).toMatchObject({ loginBaseUrl: "https://login.example.com/signin?brand=x" });
    expect(validateSettings(oidcApp(""), allowed).config).not.toHaveProperty("loginBaseUrl");
  });

  it("may not name any other origin (another host, port or scheme, a look-alike)", () => {
    for (const url of ["https://evil.example.net/", "https://login.example.com:8443/", "http://login.example.com/", "https://login.example.com.evil.net/"]) {
      expect(reason(() => validateSettings(oidcApp(url), allowed))).toBe("Errors.App.LoginBaseUrl.NotAllowed");
    }
    expect(reason(() => validateSettings(oidcApp("https://login.example.com/#x"), allowed))).toBe("Errors.App.Uri.Fragment");
  });
});
