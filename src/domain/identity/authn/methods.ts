// ListAuthenticationMethodTypes: what the user can sign in with, ready methods only (a started TOTP or passkey
// registration does not count); IDP when the user is linked to an account at an identity provider.
import type { Ctx } from "../../context.js";
import { authnSubject } from "./access.js";

export type MethodType = "PASSWORD" | "PASSKEY" | "IDP" | "TOTP" | "OTP_EMAIL";

export async function authenticationMethodTypes(ctx: Ctx, userId: string): Promise<MethodType[]> {
  const user = await authnSubject(ctx, userId, "read");
  const m = await ctx.store.authn.methods(user.id);
  const types: MethodType[] = [];
  if (m.password) types.push("PASSWORD");
  if (m.passkey) types.push("PASSKEY");
  if (m.idp) types.push("IDP");
  if (m.totp) types.push("TOTP");
  if (m.otpEmail) types.push("OTP_EMAIL");
  return types;
}
