// The hosted login's forms that send mail or create accounts count against the brute-force limits: password reset
// requests per login name and per address, registrations per address. Past a limit: the 429 page with Retry-After,
// and nothing is sent or created.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { setLogin } from "../support/authn.js";
import { createHuman, defaultOrgId } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { type SmtpSink, startSmtpSink } from "../support/smtp.js";

let t: TestServer;
let smtp: SmtpSink;
let orgId: string;
let domain: string;

beforeAll(async () => {
  smtp = await startSmtpSink();
  t = await startTestServer({
    SVC_SMTP_URL: smtp.url,
    SVC_SMTP_FROM: "svc <no-reply@example.com>",
    SVC_RATE_LIMIT_CLIENT_FAILURES: "3",
    SVC_RATE_LIMIT_ADDRESS_FAILURES: "8",
  });
  orgId = await defaultOrgId(t);
  domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  await createHuman(t, orgId, "limit-lea");
  await setLogin(t, orgId, { allowRegister: true });
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await smtp?.close();
});

/** A form post the way a browser sends it: the page first (cookie and CSRF token), then the form. */
async function post(path: string, form: Record<string, string>): Promise<Response> {
  const page = await fetch(`${t.url}${path}`);
  const cookie = (page.headers.getSetCookie()[0] ?? "").split(";", 1)[0] as string;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
  return fetch(`${t.url}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie },
    body: new URLSearchParams({ _csrf: csrf, ...form }),
  });
}

describe("limits of the hosted login's forms", () => {
  it("refuses more password reset requests for one login name than the limit allows", async () => {
    const loginName = `limit-lea@${domain}`;
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await post("/ui/login/password/reset", { loginName })).status);
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses[3]).toBe(429);
    const refused = await post("/ui/login/password/reset", { loginName });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused.text()).toContain("Too many attempts");
  });

  it("refuses registrations from one address past the address limit", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 10 && !statuses.includes(429); i++) {
      const res = await post("/ui/login/register", {
        givenName: "Reg",
        familyName: `Number${i}`,
        email: `reg-${i}@example.com`,
        password: "Registered-Passw0rd!",
        passwordRepeat: "Registered-Passw0rd!",
      });
      statuses.push(res.status);
    }
    // The first ones create their accounts (and sign them in: a redirect); then the address is out of attempts.
    expect(statuses[0]).toBe(303);
    expect(statuses).toContain(429);
  });
});
