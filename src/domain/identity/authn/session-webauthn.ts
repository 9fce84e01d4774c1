// The WebAuthn factor of a session (registered in sessions/registry.ts): challenges.webAuthN makes the request
// options for the user's passkeys of the relying party `domain` (the challenge kept on the session, five minutes);
// checks.webAuthN verifies the assertion against that challenge, the relying party's origins and the passkey's
// public key, and moves its signature counter forward (a cloned authenticator replaying a counter is refused).
// Whether the authenticator verified the user is recorded: it makes the passkey a sign-in by itself.
import { generateAuthenticationOptions, verifyAuthenticationResponse } from "@simplewebauthn/server";
import type { Ctx } from "../../context.js";
import { failedPrecondition, invalidArgument } from "../../errors.js";
import type { FactorChallenge, FactorCheck } from "../../sessions/factors.js";
import type { Effective } from "../../settings/values.js";
import { authnSettings } from "./access.js";
import { expectedOrigins, plainJson, relyingPartyId } from "./webauthn.js";

export const ASSERTION_TTL_MS = 5 * 60_000;

interface AssertionChallenge {
  challenge: string;
  rpId: string;
  userVerification: "required" | "preferred" | "discouraged";
  expiresAt: string;
}

/** Passkeys sign in by themselves (passkeysAllowed), or are a second factor ("u2f") or a multi-factor. */
function allowed(login: Effective<"login">): void {
  if (!login.passkeysAllowed && !login.secondFactors.includes("u2f") && !login.multiFactors.includes("u2f_with_verification")) {
    throw failedPrecondition("Errors.User.Factor.NotAllowed", "the login settings do not allow passkeys or security keys");
  }
}

export const webAuthNChallenge: FactorChallenge<"webAuthN"> = async (step, input) => {
  allowed(step.login);
  const rpId = relyingPartyId(input.domain, authnSettings(step.ctx).externalUrl);
  const passkeys = await step.ctx.store.authn.readyPasskeys(step.user.id, rpId);
  if (passkeys.length === 0) throw failedPrecondition("Errors.User.Passkey.NoneReady", `the user has no passkey for ${rpId}`);
  const options = await generateAuthenticationOptions({
    rpID: rpId,
    allowCredentials: passkeys.map((p) => ({ id: p.credentialId as string, transports: p.transports })),
    userVerification: input.userVerification,
    timeout: ASSERTION_TTL_MS,
  });
  const state: AssertionChallenge = {
    challenge: options.challenge,
    rpId,
    userVerification: input.userVerification,
    expiresAt: new Date(step.now.getTime() + ASSERTION_TTL_MS).toISOString(),
  };
  step.patch.webauthnChallenge = { ...state };
  return { webAuthN: { publicKeyCredentialRequestOptions: plainJson(options) } };
};

/** The one answer to an assertion that does not verify: it never says which part failed. */
const refused = () => invalidArgument("Errors.Session.WebAuthN.Invalid", "the passkey check failed", { field: "checks.web_auth_n" });

export const webAuthNCheck: FactorCheck<"webAuthN"> = async (step, { credentialAssertionData }) => {
  allowed(step.login);
  const { ctx, now, user } = step;
  const state = step.session.webauthnChallenge as AssertionChallenge | null;
  if (!state?.challenge)
    throw failedPrecondition("Errors.Session.WebAuthN.NoChallenge", "no passkey challenge was requested in this session (challenges.web_auth_n)");
  if (new Date(state.expiresAt).getTime() <= now.getTime()) {
    throw failedPrecondition("Errors.Session.WebAuthN.ChallengeExpired", "the passkey challenge has expired: request a new one");
  }
  const credentialId = typeof credentialAssertionData.id === "string" ? credentialAssertionData.id : "";
  const passkey = (await ctx.store.authn.readyPasskeys(user.id, state.rpId)).find((p) => p.credentialId === credentialId);
  if (!passkey?.credentialId || !passkey.publicKey) throw refused();
  const info = await verified(ctx, credentialAssertionData, state, {
    id: passkey.credentialId,
    publicKey: new Uint8Array(passkey.publicKey),
    counter: Number(passkey.counter),
    transports: passkey.transports,
  });
  // Compare-and-set on the counter: of two assertions with one counter value, one passes.
  if (!(await ctx.store.authn.usePasskey(passkey.id, passkey.counter, BigInt(info.newCounter), now))) throw refused();
  step.patch.webauthnCheckedAt = now;
  step.patch.webauthnUserVerified = info.userVerified;
  step.patch.webauthnChallenge = null;
};

async function verified(
  ctx: Ctx,
  response: Record<string, unknown>,
  state: AssertionChallenge,
  credential: { id: string; publicKey: Uint8Array<ArrayBuffer>; counter: number; transports: string[] },
) {
  try {
    const result = await verifyAuthenticationResponse({
      response: response as unknown as Parameters<typeof verifyAuthenticationResponse>[0]["response"],
      expectedChallenge: state.challenge,
      expectedOrigin: expectedOrigins(state.rpId, authnSettings(ctx).externalUrl),
      expectedRPID: state.rpId,
      credential,
      requireUserVerification: state.userVerification === "required",
    });
    if (!result.verified) throw refused();
    return result.authenticationInfo;
  } catch (err) {
    ctx.log.info({ requestId: ctx.requestId, reason: err instanceof Error ? err.message : String(err) }, "a passkey assertion was refused");
    throw refused();
  }
}
