// The WebAuthn ceremony of the login pages: reads the options the server put in #webauthn-options, asks the browser's
// authenticator (through @simplewebauthn/browser, loaded before this file), and submits the answer in the form.
(() => {
  const form = document.getElementById("webauthn-form");
  const optionsElement = document.getElementById("webauthn-options");
  if (!form || !optionsElement || !window.SimpleWebAuthnBrowser) return;
  const { startAuthentication, startRegistration, browserSupportsWebAuthn } = window.SimpleWebAuthnBrowser;
  const errorBox = document.getElementById("webauthn-error");
  const showError = () => {
    if (!errorBox) return;
    errorBox.textContent = form.dataset.errorText || "";
    errorBox.hidden = false;
  };
  if (!browserSupportsWebAuthn()) {
    showError();
    return;
  }
  let running = false;
  form.addEventListener("submit", async (event) => {
    const field = document.getElementById("webauthn-credential");
    if (field?.value) return;
    event.preventDefault();
    if (running) return;
    running = true;
    try {
      const optionsJSON = JSON.parse(optionsElement.textContent || "{}");
      const answer = form.dataset.ceremony === "register" ? await startRegistration({ optionsJSON }) : await startAuthentication({ optionsJSON });
      field.value = JSON.stringify(answer);
      form.submit();
    } catch {
      showError();
    } finally {
      running = false;
    }
  });
})();
