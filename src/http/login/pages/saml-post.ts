// The last page of a SAML sign-in: the Response posted to the SP's ACS (HTTP-POST binding), by a script file where
// scripts run (the CSP allows no inline script) and by the visible button where they do not. Also the answer to a
// passive request (IsPassive), which must not show the user anything else.
import { asDomainError } from "../../../domain/errors.js";
import { createResponse, type SamlAnswer, type SamlRequestView } from "../../../domain/saml/login-ui.js";
import { html } from "../html.js";
import type { LoginRequest } from "../page.js";

export async function samlPostPage(r: LoginRequest, acs: string, post: { samlResponse: string; relayState: string | null }): Promise<void> {
  await r.render((p) => ({
    title: p.t("saml.post.title"),
    body: html`<form id="saml-post" method="post" action="${acs}">
<input type="hidden" name="SAMLResponse" value="${post.samlResponse}" />
${post.relayState !== null ? html`<input type="hidden" name="RelayState" value="${post.relayState}" />` : ""}
<p>${p.t("saml.post.text")}</p>
<button class="button" type="submit">${p.t("saml.post.button")}</button>
</form>`,
    scripts: ["saml-post.js"],
  }));
}

/** Sends the browser on with a SAML answer: the auto-posting page, or a redirect (an ACS with the Redirect binding). */
export const sendSamlAnswer = (r: LoginRequest, answer: SamlAnswer) => ("post" in answer ? samlPostPage(r, answer.url, answer.post) : r.redirect(answer.url));

/**
 * IsPassive: the browser's one session answers when it completes the sign-in as it is; otherwise (no session, several,
 * or one that would need the user) the SP gets NoPassive.
 */
export async function samlPassive(r: LoginRequest, request: SamlRequestView): Promise<void> {
  const only = r.state.sessions.length === 1 ? r.state.sessions[0] : undefined;
  if (only && (await r.stillValid(only))) {
    try {
      const { answer } = await createResponse(r.ctx, r.deps.saml, { samlRequestId: request.id, session: { sessionId: only.id, sessionToken: only.token } });
      return sendSamlAnswer(r, answer);
    } catch (err) {
      if (!asDomainError(err)) throw err;
    }
  }
  const { answer } = await createResponse(r.ctx, r.deps.saml, {
    samlRequestId: request.id,
    error: { error: "NoPassive", description: "the user must sign in" },
  });
  return sendSamlAnswer(r, answer);
}
