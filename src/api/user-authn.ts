// UserService's authentication methods (TOTP, passkeys, e-mail OTP, password reset and e-mail codes, the list of
// methods): proto ⇄ domain only; the rules are in src/domain/identity/authn.
import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { AuthenticationMethodType, AuthFactorState, PasskeyAuthenticator, type ReturnCode, type SendCode } from "../../gen/svc/user/v2/authn_pb.js";
import type { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { invalidArgument } from "../domain/errors.js";
import type { Delivery } from "../domain/identity/authn/delivery.js";
import { sendEmailCode, verifyEmail } from "../domain/identity/authn/email.js";
import { createInviteCode } from "../domain/identity/authn/invite.js";
import { authenticationMethodTypes, type MethodType } from "../domain/identity/authn/methods.js";
import { addOtpEmail, removeOtpEmail } from "../domain/identity/authn/otp-email.js";
import { listPasskeys, registerPasskey, removePasskey, verifyPasskeyRegistration } from "../domain/identity/authn/passkeys.js";
import { requestPasswordReset } from "../domain/identity/authn/password-reset.js";
import { returnPhoneCode, verifyPhone } from "../domain/identity/authn/phone.js";
import type { Change } from "../domain/identity/authn/ports.js";
import { registerTotp, removeTotp, verifyTotpRegistration } from "../domain/identity/authn/totp.js";
import { exactTotal } from "../domain/list.js";
import { ctxOf, ctxWithSession } from "./connect.js";
import { listDetails, ts, tsOpt } from "./convert.js";

type AuthnRpcs =
  | "registerTOTP"
  | "verifyTOTPRegistration"
  | "removeTOTP"
  | "registerPasskey"
  | "verifyPasskeyRegistration"
  | "listPasskeys"
  | "removePasskey"
  | "addOTPEmail"
  | "removeOTPEmail"
  | "passwordReset"
  | "createInviteCode"
  | "sendEmailCode"
  | "verifyEmail"
  | "sendPhoneCode"
  | "verifyPhone"
  | "listAuthenticationMethodTypes";

const details = (c: Change) => ({ details: { changeDate: ts(c.at), resourceOwner: c.orgId } });

const METHOD_TYPES: Record<MethodType, AuthenticationMethodType> = {
  PASSWORD: AuthenticationMethodType.PASSWORD,
  PASSKEY: AuthenticationMethodType.PASSKEY,
  IDP: AuthenticationMethodType.IDP,
  TOTP: AuthenticationMethodType.TOTP,
  OTP_EMAIL: AuthenticationMethodType.OTP_EMAIL,
};

const AUTHENTICATORS: Record<number, "platform" | "cross-platform" | undefined> = {
  [PasskeyAuthenticator.UNSPECIFIED]: undefined,
  [PasskeyAuthenticator.PLATFORM]: "platform",
  [PasskeyAuthenticator.CROSS_PLATFORM]: "cross-platform",
};

/** Where a code goes: unset means sent, without a link. */
function delivery(medium: { case: string | undefined; value?: SendCode | ReturnCode }): Delivery {
  if (medium.case === "returnCode") return { kind: "return" };
  const send = medium.value as SendCode | undefined;
  return { kind: "send", ...(send?.urlTemplate !== undefined ? { urlTemplate: send.urlTemplate } : {}) };
}

export const userAuthn: Pick<ServiceImpl<typeof UserService>, AuthnRpcs> = {
  async registerTOTP(req, hctx) {
    const out = await registerTotp(ctxWithSession(hctx, req.session), req.userId);
    return { ...details(out), uri: out.uri, secret: out.secret };
  },
  async verifyTOTPRegistration(req, hctx) {
    return details(await verifyTotpRegistration(ctxWithSession(hctx, req.session), req.userId, req.code));
  },
  async removeTOTP(req, hctx) {
    return details(await removeTotp(ctxWithSession(hctx, req.session), req.userId));
  },
  async registerPasskey(req, hctx) {
    if (!(req.authenticator in AUTHENTICATORS)) throw invalidArgument("Errors.User.Passkey.AuthenticatorInvalid", `unknown authenticator ${req.authenticator}`);
    const out = await registerPasskey(ctxWithSession(hctx, req.session), {
      userId: req.userId,
      domain: req.domain,
      authenticator: AUTHENTICATORS[req.authenticator],
    });
    return { ...details(out), passkeyId: out.passkeyId, publicKeyCredentialCreationOptions: out.options as JsonObject };
  },
  async verifyPasskeyRegistration(req, hctx) {
    const change = await verifyPasskeyRegistration(ctxWithSession(hctx, req.session), {
      userId: req.userId,
      passkeyId: req.passkeyId,
      credential: req.publicKeyCredential,
      name: req.passkeyName,
    });
    return details(change);
  },
  async listPasskeys(req, hctx) {
    const passkeys = await listPasskeys(ctxOf(hctx), req.userId);
    return {
      details: listDetails(ctxOf(hctx), exactTotal(passkeys.length)),
      result: passkeys.map((p) => ({
        id: p.id,
        name: p.name,
        state: p.ready ? AuthFactorState.READY : AuthFactorState.NOT_READY,
        creationDate: ts(p.createdAt),
        lastUsedDate: tsOpt(p.lastUsedAt),
      })),
    };
  },
  async removePasskey(req, hctx) {
    return details(await removePasskey(ctxWithSession(hctx, req.session), req.userId, req.passkeyId));
  },
  async addOTPEmail(req, hctx) {
    return details(await addOtpEmail(ctxWithSession(hctx, req.session), req.userId));
  },
  async removeOTPEmail(req, hctx) {
    return details(await removeOtpEmail(ctxWithSession(hctx, req.session), req.userId));
  },
  async passwordReset(req, hctx) {
    const out = await requestPasswordReset(ctxOf(hctx), req.userId, delivery(req.medium));
    return { ...details(out), verificationCode: out.code };
  },
  async createInviteCode(req, hctx) {
    const out = await createInviteCode(ctxOf(hctx), req.userId, delivery(req.verification));
    return { ...details(out), inviteCode: out.code };
  },
  async sendEmailCode(req, hctx) {
    const out = await sendEmailCode(ctxOf(hctx), req.userId, delivery(req.verification));
    return { ...details(out), verificationCode: out.code };
  },
  async sendPhoneCode(req, hctx) {
    const out = await returnPhoneCode(ctxOf(hctx), req.userId);
    return { ...details(out), verificationCode: out.code };
  },
  async verifyPhone(req, hctx) {
    return details(await verifyPhone(ctxOf(hctx), req.userId, req.verificationCode));
  },
  async verifyEmail(req, hctx) {
    return details(await verifyEmail(ctxOf(hctx), req.userId, req.verificationCode));
  },
  async listAuthenticationMethodTypes(req, hctx) {
    const types = await authenticationMethodTypes(ctxOf(hctx), req.userId);
    return { details: listDetails(ctxOf(hctx), exactTotal(types.length)), authMethodTypes: types.map((t) => METHOD_TYPES[t]) };
  },
};
