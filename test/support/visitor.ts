// A browser without a browser for the hosted login: its cookie (svc-login) and the CSRF token of the last page, over
// fetch; and the sign-in through the pages as a browser makes it (the login name, then the password page for it).
import { expect } from "@jest/globals";
import type { TestServer } from "./server.js";

export class Visitor {
  cookie = "";
  csrf = "";
  constructor(
    private readonly t: TestServer,
    private readonly headers: Record<string, string> = {},
  ) {}

  private keep(res: Response): void {
    const set = res.headers.getSetCookie().find((c) => c.startsWith("svc-login="));
    if (set) this.cookie = set.slice(0, set.indexOf(";"));
  }

  async get(path: string): Promise<{ res: Response; body: string }> {
    const url = path.startsWith("http") ? path : `${this.t.url}${path}`;
    const res = await fetch(url, { redirect: "manual", headers: { cookie: this.cookie, ...this.headers } });
    this.keep(res);
    const body = await res.text();
    const m = /name="_csrf" value="([^"]+)"/.exec(body);
    if (m) this.csrf = m[1] as string;
    return { res, body };
  }

  async post(path: string, form: Record<string, string> | string, headers: Record<string, string> = {}): Promise<{ res: Response; body: string }> {
    const body = typeof form === "string" ? form : new URLSearchParams({ _csrf: this.csrf, ...form }).toString();
    const res = await fetch(`${this.t.url}${path}`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: this.cookie, ...this.headers, ...headers },
      body,
    });
    this.keep(res);
    return { res, body: await res.text() };
  }
}

export const locationOf = (res: Response): URL => new URL(res.headers.get("location") as string);

/**
 * Signs `loginName` in through the pages, as a browser does: the login name (answered with the password page for
 * every name), then the password. Returns the session the password made and where the browser was sent next.
 */
export async function signInThroughPages(
  v: Visitor,
  loginName: string,
  password: string,
  flow: Record<string, string> = {},
): Promise<{ session: string; next: URL }> {
  const q = new URLSearchParams(flow).toString();
  await v.get(`/ui/login/login${q ? `?${q}` : ""}`);
  const named = await v.post("/ui/login/login", { ...flow, loginName });
  expect(named.res.status).toBe(303);
  const passwordPage = locationOf(named.res);
  expect(passwordPage.pathname).toBe("/ui/login/password");
  await v.get(passwordPage.pathname + passwordPage.search);
  const done = await v.post("/ui/login/password", { ...flow, loginName, password });
  expect(done.res.status).toBe(303);
  const next = locationOf(done.res);
  return { session: next.searchParams.get("session") ?? "", next };
}
