// svc.oidc.v2.OIDCService: the login UI's half of the authorization code flow. Translation only; the rules are in
// src/domain/oauth/authorize/login-ui.ts.
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { AuthRequestSchema, ErrorReason, Prompt } from "../../gen/svc/oidc/v2/oidc_pb.js";
import type { OIDCService } from "../../gen/svc/oidc/v2/oidc_service_pb.js";
import { invalidArgument } from "../domain/errors.js";
import type { AuthorizationError } from "../domain/oauth/authorize/callback.js";
import { createCallback, getAuthRequest } from "../domain/oauth/authorize/login-ui.js";
import { ctxOf } from "./connect.js";
import { changed, ts } from "./convert.js";

const PROMPTS: Record<string, Prompt> = {
  none: Prompt.NONE,
  login: Prompt.LOGIN,
  consent: Prompt.CONSENT,
  select_account: Prompt.SELECT_ACCOUNT,
  create: Prompt.CREATE,
};

const ERRORS: Record<number, AuthorizationError> = {
  [ErrorReason.ERROR_REASON_INVALID_REQUEST]: "invalid_request",
  [ErrorReason.ERROR_REASON_UNAUTHORIZED_CLIENT]: "unauthorized_client",
  [ErrorReason.ERROR_REASON_ACCESS_DENIED]: "access_denied",
  [ErrorReason.ERROR_REASON_UNSUPPORTED_RESPONSE_TYPE]: "unsupported_response_type",
  [ErrorReason.ERROR_REASON_INVALID_SCOPE]: "invalid_scope",
  [ErrorReason.ERROR_REASON_SERVER_ERROR]: "server_error",
  [ErrorReason.ERROR_REASON_TEMPORARY_UNAVAILABLE]: "temporarily_unavailable",
  [ErrorReason.ERROR_REASON_INTERACTION_REQUIRED]: "interaction_required",
  [ErrorReason.ERROR_REASON_LOGIN_REQUIRED]: "login_required",
  [ErrorReason.ERROR_REASON_ACCOUNT_SELECTION_REQUIRED]: "account_selection_required",
  [ErrorReason.ERROR_REASON_CONSENT_REQUIRED]: "consent_required",
};

/** `issuer`: what callbacks carry as iss (RFC 9207); `codeLifetime`: seconds a code may wait for redemption. */
export function oidcService(f: { issuer: string; codeLifetime: number }): ServiceImpl<typeof OIDCService> {
  return {
    async getAuthRequest(req, hctx) {
      const r = await getAuthRequest(ctxOf(hctx), req.authRequestId);
      return {
        authRequest: create(AuthRequestSchema, {
          id: r.id,
          creationDate: ts(r.createdAt),
          expirationDate: ts(r.expiresAt),
          clientId: r.clientId,
          scope: r.scopes,
          redirectUri: r.redirectUri,
          prompt: r.prompt.map((p) => PROMPTS[p] ?? Prompt.UNSPECIFIED),
          uiLocales: r.uiLocales,
          loginHint: r.loginHint ?? undefined,
          hintUserId: r.hintUserId ?? undefined,
          maxAge: r.maxAge === null ? undefined : durationFromMs(r.maxAge * 1000),
        }),
      };
    },

    async createCallback(req, hctx) {
      const ctx = ctxOf(hctx);
      const kind = req.callbackKind;
      if (kind.case === undefined) {
        throw invalidArgument("Errors.AuthRequest.Callback.Missing", "give either session or error", { field: "callback_kind" });
      }
      const { callbackUrl, at } =
        kind.case === "session"
          ? await createCallback(ctx, f, { authRequestId: req.authRequestId, session: kind.value, consentGranted: req.consentGranted })
          : await createCallback(ctx, f, {
              authRequestId: req.authRequestId,
              error: { error: ERRORS[kind.value.error], description: kind.value.errorDescription },
            });
      return { details: changed(at), callbackUrl };
    },
  };
}
