// OIDC logout's pure parts (issue 29): the logout token's claims (Back-Channel Logout 1.0 §2.4: events, sid, sub, no
// nonce, a short life) and the front-channel page (its frames escaped, its CSP's frame-src exactly their origins).
import { describe, expect, it } from "@jest/globals";
import { BACKCHANNEL_LOGOUT_EVENT_URI, logoutTokenClaims } from "../../src/actions/logout-tokens.js";
import { frontchannelPage } from "../../src/http/oauth/frontchannel.js";

describe("logout token claims", () => {
  const payload = { uri: "https://rp.example.com/bcl", clientId: "c1@p", alg: "RS256", sub: "u1", sid: "s1" };

  it("have iss, aud, iat, exp (short), jti, the event, sub and sid, and no nonce", () => {
    const c = logoutTokenClaims("https://id.example.com", payload, 1_000);
    expect(c).toMatchObject({ iss: "https://id.example.com", aud: "c1@p", iat: 1_000, sub: "u1", sid: "s1", events: { [BACKCHANNEL_LOGOUT_EVENT_URI]: {} } });
    expect(c.exp as number).toBeGreaterThan(1_000);
    expect(c.exp as number).toBeLessThanOrEqual(1_000 + 300);
    expect(c).not.toHaveProperty("nonce");
    expect(logoutTokenClaims("https://id.example.com", payload, 1_000).jti).not.toBe(c.jti);
  });

  it("leave sub out when the session had no user, never sid", () => {
    const c = logoutTokenClaims("https://id.example.com", { ...payload, sub: null }, 1_000);
    expect(c).not.toHaveProperty("sub");
    expect(c.sid).toBe("s1");
  });
});

describe("the front-channel logout page", () => {
  it("frames each URI, escaped, and lets frames come from their origins only", () => {
    const page = frontchannelPage(
      ["https://a.example.com/fc?iss=x&sid=1", 'https://b.example.com:8443/fc?x="><script>', "https://a.example.com/other"],
      "https://a.example.com/bye?state=1",
      "https://id.example.com/ui/login/assets/frontchannel.js",
    );
    expect(page.body).not.toContain('"><script>');
    expect(page.body).toContain('src="https://a.example.com/fc?iss=x&#38;sid=1"');
    expect(page.body.match(/<iframe /g)).toHaveLength(3);
    const csp = page.headers["content-security-policy"] ?? "";
    const frameSrc = csp.split(";").find((d) => d.trim().startsWith("frame-src"));
    expect(frameSrc?.trim()).toBe("frame-src https://a.example.com https://b.example.com:8443");
    expect(csp).toContain("script-src https://id.example.com;");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(page.body).toContain('id="frontchannel-next" href="https://a.example.com/bye?state=1"');
  });

  it("without a next page says signed out and goes nowhere", () => {
    const page = frontchannelPage(["https://a.example.com/fc"], undefined, "https://id.example.com/ui/login/assets/frontchannel.js", "Signed out");
    expect(page.body).not.toContain("frontchannel-next");
    expect(page.body).not.toContain("http-equiv");
    expect(page.body).toContain("<h1>Signed out</h1>");
  });
});
