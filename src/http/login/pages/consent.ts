// Consent (prompt=consent): the application's name and what it asks for; "Allow" records the consent (the user's own
// act, presenting this browser's session) and finishes the sign-in, "Deny" sends the application access_denied. Only
// for a session whose sign-in is done; any other goes on with its step.
import type { Express } from "express";
import type { Ctx } from "../../../domain/context.js";
import { asDomainError } from "../../../domain/errors.js";
import { createCallback } from "../../../domain/oauth/authorize/login-ui.js";
import { consentQuestion, grantConsent } from "../../../domain/oauth/consent.js";
import { type LinkedSession, sessionForLink, signInState } from "../../../domain/sessions/link.js";
import { type LoginDeps, presenting, selfCtx } from "../context.js";
import { type BrowserSession, withoutSession } from "../cookie.js";
import { continueSignIn, finishSignIn } from "../flow.js";
import { html } from "../html.js";
import { hidden } from "../layout.js";
import { type LoginRequest, page } from "../router.js";

/** The scopes with a text of their own; any other is shown as it is. */
const KNOWN_SCOPES = new Set(["openid", "profile", "email", "phone", "address", "offline_access"]);
const MANAGEMENT = "urn:svc:iam:org:project:id:svc:aud";

/** The browser's session of the request when its sign-in is done, as the user itself; else redirected. */
async function signedIn(r: LoginRequest): Promise<{ s: BrowserSession; linked: LinkedSession; self: Ctx } | undefined> {
  await r.loadAuthRequest();
  const s = r.session(r.idParam("session"));
  if (!r.authRequest || !s) {
    r.redirect(r.url("/login", r.flowQuery()));
    return undefined;
  }
  let linked: LinkedSession;
  try {
    linked = await sessionForLink(r.ctx, s.id, s.token);
  } catch (err) {
    if (!asDomainError(err)) throw err;
    r.setState(withoutSession(r.state, s.id));
    r.redirect(r.url("/login", r.flowQuery()));
    return undefined;
  }
  r.orgId ??= linked.orgId;
  if ((await signInState(r.ctx, linked)).step.kind !== "done") {
    await continueSignIn(r, s);
    return undefined;
  }
  return { s, linked, self: presenting(selfCtx(r.deps, r.req, { id: linked.userId, orgId: linked.orgId }), s) };
}

function scopeText(r: LoginRequest, scope: string): string {
  if (scope === MANAGEMENT) return r.t("consent.scope.management");
  return KNOWN_SCOPES.has(scope) ? r.t(`consent.scope.${scope}`) : scope;
}

async function getConsent(r: LoginRequest): Promise<void> {
  const a = await signedIn(r);
  if (!a) return;
  const q = await consentQuestion(a.self, a.linked.userId, r.authRequest?.id ?? "");
  await r.render((p) => ({
    title: p.t("consent.title", { app: q.appName }),
    subtitle: p.t("consent.subtitle", { app: q.appName }),
    body: html`<ul class="list" aria-label="${p.t("consent.scopes")}">${q.scopes.map((sc) => html`<li>${scopeText(r, sc)}</li>`)}</ul>
<form method="post" action="${p.url("/consent")}">
${hidden(p, r.flowQuery({ session: a.s.id }))}
<button type="submit" name="decision" value="allow" class="button primary">${p.t("consent.allow")}</button>
<button type="submit" name="decision" value="deny" class="button secondary">${p.t("consent.deny")}</button>
</form>`,
  }));
}

async function postConsent(r: LoginRequest): Promise<void> {
  const a = await signedIn(r);
  if (!a || !r.authRequest) return;
  if (r.param("decision") !== "allow") {
    const { callbackUrl } = await createCallback(
      r.ctx,
      { issuer: r.deps.issuer, codeLifetime: r.deps.codeLifetime },
      { authRequestId: r.authRequest.id, error: { error: "access_denied", description: "the user did not allow the application" } },
    );
    return r.redirect(callbackUrl);
  }
  await grantConsent(a.self, a.linked.userId, r.authRequest.id);
  await finishSignIn(r, a.s);
}

export function consentPages(app: Express, deps: LoginDeps): void {
  app.get("/ui/login/consent", page(deps, getConsent));
  app.post("/ui/login/consent", page(deps, postConsent));
}
