// Starts the console: at /callback it finishes the sign-in, at /signed-out it offers to sign in again, anywhere else
// it signs in first (through the hosted login) and then renders the app. This entry holds only the sign-in: the
// redirect to the hosted login goes out before React and Mantine are even fetched, and at /callback the code is
// redeemed while they load (boot.tsx).
import { completeSignIn, pendingReturnTo, signIn } from "./auth";
import { settings } from "./config";

const route = location.pathname.slice(settings.base.length);

// A page's chunk that no longer exists (svc was updated, or the console rebuilt, since this tab loaded) would leave a
// blank page: load the current index instead (the sign-in comes back to the same page). Once per failure: a chunk
// that fails again after the reload is not fixed by another one.
const RELOADED = "svc-console.reloaded";
addEventListener("vite:preloadError", (e) => {
  const failure = String((e as Event & { payload?: unknown }).payload);
  if (sessionStorage.getItem(RELOADED) === failure) return;
  sessionStorage.setItem(RELOADED, failure);
  location.reload();
});

async function start(): Promise<void> {
  // The redirect URIs are registered at the external URL: a console opened at another address moves there first.
  const home = new URL(settings.issuer);
  if (location.origin !== home.origin) {
    location.replace(`${home.origin}${location.pathname}${location.search}`);
    return;
  }
  if (route === "/signed-out") {
    history.replaceState(null, "", `${settings.base}/signed-out`);
    (await import("./boot")).renderNotice("Signed out", "You have been signed out of the svc console.", "Sign in again");
    return;
  }
  if (route === "/callback") {
    // React, Mantine and the first page load while the code is redeemed; the questions that decide the navigation
    // go out as soon as there is a token, before React renders.
    const boot = import("./boot");
    const access = import("./access");
    // The overview, the page most sign-ins return to, is fetched beside them.
    if ((pendingReturnTo() ?? "").replace(/\/+$/, "") === settings.base) void import("./pages/home");
    let returnTo: string;
    try {
      returnTo = await completeSignIn();
    } catch (err) {
      history.replaceState(null, "", `${settings.base}/`);
      (await boot).renderNotice("Sign-in failed", err instanceof Error ? err.message : String(err), "Try again");
      return;
    }
    history.replaceState(null, "", returnTo);
    (await access).startAccess();
    (await boot).renderApp();
    return;
  }
  await signIn();
}

void start();
