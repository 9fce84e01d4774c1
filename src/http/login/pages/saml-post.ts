// The last page of a SAML sign-in: the Response posted to the SP's ACS (HTTP-POST binding), by a script file where
// scripts run (the CSP allows no inline script) and by the visible button where they do not.
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
