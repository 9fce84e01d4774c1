// Sign-in with an external OpenID provider from the hosted login: a button per provider on the login name page starts
// an intent (UserService.StartIdentityProviderIntent's domain function) and sends the browser to the provider; svc's
// /idps/callback brings it back to /idp/success with the intent's id and one-time token, which a session check
// (CreateSession with idp_intent) turns into a signed-in session: the linked user, or one the provider's options link
// or create. A provider user that may not be linked or created gets a page that says what to do.
import type { Express } from "express";
import type { Ctx } from "../../../domain/context.js";
import { asDomainError } from "../../../domain/errors.js";
import { startIntent } from "../../../domain/idp/intents.js";
import { type IdpView, listIdentityProviders } from "../../../domain/idp/providers.js";
import { getSession } from "../../../domain/sessions/reads.js";
import { createSession } from "../../../domain/sessions/sessions.js";
import type { LoginDeps } from "../context.js";
import { withSession } from "../cookie.js";
import { continueSignIn, SESSION_LIFETIME_SECONDS } from "../flow.js";
import { type Html, html } from "../html.js";
import { hidden, type PageContext } from "../layout.js";
import { type LoginRequest, page } from "../router.js";

/** Providers change rarely: read at most every few seconds per organization (they are only offered here). */
const TTL_MS = 5_000;
const cache = new Map<string, { at: number; idps: IdpView[] }>();

/** The providers offered on the login page: the instance's and, when the organization is known, its own. */
export async function offeredProviders(ctx: Ctx, orgId: string | undefined): Promise<IdpView[]> {
  const key = orgId ?? "";
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < TTL_MS) return hit.idps;
  let idps: IdpView[] = [];
  try {
    idps = (await listIdentityProviders(ctx, orgId ?? "")).idps;
  } catch (err) {
    // An organization named in a scope that does not exist offers the instance's providers.
    if (!asDomainError(err)) throw err;
    if (orgId) return offeredProviders(ctx, undefined);
  }
  if (cache.size > 10_000) cache.clear();
  cache.set(key, { at: Date.now(), idps });
  return idps;
}

/** The buttons of the login name page (nothing when external sign-in is off or no provider is configured). */
export function providerButtons(p: PageContext, r: LoginRequest, idps: IdpView[]): Html | string {
  if (!idps.length) return "";
  return html`<div class="external" role="group" aria-label="${p.t("external.group")}">
<p class="divider">${p.t("external.or")}</p>
${idps.map(
  (idp) =>
    html`<form method="post" action="${p.url("/idp/start")}">${hidden(p, r.flowQuery({ idp: idp.id }))}<button type="submit" class="button secondary">${p.t("external.signInWith", { name: idp.name })}</button></form>`,
)}
</div>`;
}

async function postStart(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const idpId = r.idParam("idp");
  if (!idpId) return r.redirect(r.url("/login", r.flowQuery()));
  const back = r.flowQuery();
  const { next } = await startIntent(r.ctx, { idpId, successUrl: r.url("/idp/success", back), failureUrl: r.url("/idp/failure", back) });
  if ("authUrl" in next) return r.redirect(next.authUrl);
  // A SAML provider with the HTTP-POST binding: the AuthnRequest is posted there like a Response to an SP.
  const { url, fields } = next.post;
  await r.render((p) => ({
    title: p.t("external.post.title"),
    body: html`<form id="saml-post" method="post" action="${url}">
<input type="hidden" name="SAMLRequest" value="${fields.SAMLRequest}" />
<input type="hidden" name="RelayState" value="${fields.RelayState}" />
<p>${p.t("external.post.text")}</p>
<button class="button" type="submit">${p.t("external.post.button")}</button>
</form>`,
    scripts: ["saml-post.js"],
  }));
}

async function externalProblem(r: LoginRequest, key: string, status: number): Promise<void> {
  await r.render(
    (p) => ({
      title: p.t(`external.${key}.title`),
      body: html`<p>${p.t(`external.${key}.text`)}</p><p><a class="button secondary" href="${p.url("/login", r.flowQuery({ fresh: "1" }))}">${p.t("external.back")}</a></p>`,
    }),
    status,
  );
}

async function getSuccess(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  const id = r.idParam("id");
  const token = r.param("token");
  if (!id || !token || token.length > 200) return externalProblem(r, "failed", 400);
  try {
    const created = await createSession(r.ctx, {
      checks: { idpIntent: { idpIntentId: id, idpIntentToken: token } },
      challenges: {},
      metadata: {},
      userAgent: r.userAgent(),
      lifetimeSeconds: SESSION_LIFETIME_SECONDS,
    });
    const user = (await getSession(r.ctx, created.sessionId, created.sessionToken)).factors.user;
    r.orgId ??= user?.orgId;
    const s = { id: created.sessionId, token: created.sessionToken, userId: user?.id, loginName: user?.loginName };
    r.setState(withSession(r.state, s));
    return continueSignIn(r, s, { proved: true });
  } catch (err) {
    const d = asDomainError(err);
    if (d?.id === "Errors.IdpIntent.UserNotLinked") return externalProblem(r, "notLinked", 403);
    if (d?.id === "Errors.IdpIntent.ExternalLoginNotAllowed") return externalProblem(r, "notAllowed", 403);
    if (d && (d.id.startsWith("Errors.IdpIntent.") || d.kind === "NotFound")) return externalProblem(r, "failed", 400);
    throw err;
  }
}

async function getFailure(r: LoginRequest): Promise<void> {
  await r.loadAuthRequest();
  await externalProblem(r, "failed", 400);
}

export function externalPages(app: Express, deps: LoginDeps): void {
  app.post("/ui/login/idp/start", page(deps, postStart));
  app.get("/ui/login/idp/success", page(deps, getSuccess));
  app.get("/ui/login/idp/failure", page(deps, getFailure));
}
