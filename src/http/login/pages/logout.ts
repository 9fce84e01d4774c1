// Signing out in the browser: the page lists this browser's sessions and ends the chosen ones (or all), and the page
// OIDC's end_session sends the browser to when no post-logout redirect URI is registered.
import type { Express } from "express";
import { asDomainError } from "../../../domain/errors.js";
import { samlParticipantsOf, startLogout } from "../../../domain/saml/logout.js";
import { frontchannelLogoutUrls } from "../../../domain/sessions/frontchannel-logout.js";
import { deleteSession, getSession } from "../../../domain/sessions/reads.js";
import { frontchannelPage } from "../../oauth/frontchannel.js";
import type { LoginDeps } from "../context.js";
import { withoutSession } from "../cookie.js";
import { html } from "../html.js";
import { hidden } from "../layout.js";
import { LOGIN_BASE } from "../page.js";
import { type LoginRequest, page } from "../router.js";

async function signedOutPage(r: LoginRequest) {
  await r.render((p) => ({
    title: p.t("logout.done.title"),
    body: html`<p>${p.t("logout.done.text")}</p><p><a class="button secondary" href="${p.url("/login")}">${p.t("logout.signInAgain")}</a></p>`,
  }));
}

export function logoutPages(app: Express, deps: LoginDeps): void {
  app.get(
    "/ui/login/logout",
    page(deps, async (r) => {
      const accounts: { id: string; displayName: string; loginName: string }[] = [];
      for (const s of r.state.sessions) {
        try {
          const user = (await getSession(r.ctx, s.id, s.token)).factors.user;
          if (user) accounts.push({ id: s.id, displayName: user.displayName, loginName: user.loginName });
        } catch (err) {
          if (!asDomainError(err)) throw err;
          r.setState(withoutSession(r.state, s.id));
        }
      }
      if (accounts.length === 0) return signedOutPage(r);
      await r.render((p) => ({
        title: p.t("logout.title"),
        subtitle: p.t("logout.subtitle"),
        body: html`<ul class="accounts">${accounts.map(
          (a) =>
            html`<li><form method="post" action="${p.url("/logout")}">${hidden(p, { session: a.id })}<button type="submit" class="account"><span class="name">${a.displayName}</span><span class="login-name">${p.shown(a.loginName)}</span><span class="action">${p.t("logout.one")}</span></button></form></li>`,
        )}</ul>
<form method="post" action="${p.url("/logout")}">${hidden(p, { all: "1" })}<button type="submit" class="button primary">${p.t("logout.all")}</button></form>`,
      }));
    }),
  );

  app.post(
    "/ui/login/logout",
    page(deps, async (r) => {
      const all = r.param("all") === "1";
      const chosen = all ? r.state.sessions : r.state.sessions.filter((s) => s.id === r.idParam("session"));
      // The SAML SPs these sessions signed into are told after they end (Single Logout), read while they exist.
      const samlIdp = { store: r.ctx.store, instanceId: r.ctx.instanceId, clock: r.ctx.clock, externalUrl: r.deps.externalUrl };
      const toTell = await samlParticipantsOf(
        samlIdp,
        chosen.map((s) => s.id),
      );
      // And the OIDC applications with a front-channel logout URI, in iframes of the page that follows.
      const frames = await frontchannelLogoutUrls(
        r.ctx.store,
        r.ctx.instanceId,
        r.deps.externalUrl,
        chosen.map((s) => s.id),
      );
      for (const s of chosen) {
        try {
          // Ends the session and revokes the tokens issued from it.
          await deleteSession(r.ctx, s.id, s.token);
        } catch (err) {
          if (!asDomainError(err)) throw err;
        }
        r.setState(withoutSession(r.state, s.id));
      }
      const back = r.state.sessions.length && !all ? r.url("/logout") : r.url("/logout/done");
      const slo = await startLogout(samlIdp, toTell, back);
      if (frames.length > 0) {
        const page = frontchannelPage(frames, slo ?? back, `${r.deps.externalUrl}${LOGIN_BASE}/assets/frontchannel.js`, r.t("logout.done.title"));
        return r.send(page.headers, page.body);
      }
      if (slo) return r.redirect(slo);
      if (r.state.sessions.length && !all) return r.redirect(r.url("/logout"));
      await signedOutPage(r);
    }),
  );

  app.get(
    "/ui/login/logout/done",
    page(deps, async (r) => {
      // The sessions end_session ended are gone; the cookie forgets them.
      for (const s of r.state.sessions) await r.stillValid(s);
      await signedOutPage(r);
    }),
  );
}
