// GET /idps/callback: where external identity providers send the browser back. Parses the query, lets the domain
// finish the intent, and answers with its redirect or, when no intent is known, an error page.
import type { Logger } from "pino";
import { CALLBACK_PATH, type CallbackCtx, finishIntent } from "../../domain/idp/callback.js";
import type { Res } from "../oauth/errors.js";
import type { Req } from "../oauth/form.js";
import { sendPage, sendRedirect } from "../oauth/pages.js";

export function isIdpCallbackPath(url: string | undefined): boolean {
  if (!url) return false;
  const q = url.indexOf("?");
  return (q < 0 ? url : url.slice(0, q)) === CALLBACK_PATH;
}

export function idpCallbackHandler(ctx: (req: Req) => CallbackCtx, log: Logger): (req: Req, res: Res) => Promise<void> {
  return async (req, res) => {
    req.resume();
    // Not even HEAD: finishing an intent redeems its code, which a probe must not do.
    if (req.method !== "GET") {
      sendPage(res, 405, "Method not allowed", "The identity provider's answer comes as a GET request.", req.method === "HEAD");
      return;
    }
    try {
      const query = new URL(req.url ?? "/", "http://callback").searchParams;
      const answer = await finishIntent(ctx(req), query);
      if ("redirect" in answer) sendRedirect(res, answer.redirect);
      else sendPage(res, answer.page.status, answer.page.title, answer.page.message);
    } catch (err) {
      log.error({ err, requestId: req.headers["x-request-id"] }, "could not finish an external sign-in");
      if (!res.headersSent) sendPage(res, 500, "Sign-in failed", "Something went wrong finishing the sign-in. Try again later.");
    }
  };
}
