// Passkeys (WebAuthn credentials) with @simplewebauthn/server: a registration is started (a Passkey row holding
// the challenge, not ready) and completed by the authenticator's answer, which is verified against the challenge,
// the relying party id and its origins (webauthn.ts), with user verification required (a passkey signs in by
// itself). Attestation is not asked for ("none"): svc trusts no authenticator vendor list. The user's other
// credentials for the same relying party are excluded, so one authenticator is not registered twice.
import { generateRegistrationOptions, verifyRegistrationResponse } from "@simplewebauthn/server";
import { commit, userEvent } from "../../audit/events.js";
import type { Ctx } from "../../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../../errors.js";
import { newId } from "../../ids.js";
import { authnSettings, authnSubject, humanOnly, requireFactorAllowed } from "./access.js";
import type { Change } from "./ports.js";
import { expectedOrigins, plainJson, relyingPartyId } from "./webauthn.js";

/** How long a started registration may be completed. */
export const REGISTRATION_TTL_MS = 10 * 60_000;
/** Passkeys per user, pending registrations included. */
export const MAX_PASSKEYS = 50;

interface RegistrationChallenge {
  challenge: string;
  expiresAt: string;
}

export interface PasskeyView {
  id: string;
  name: string;
  ready: boolean;
  createdAt: Date;
  lastUsedAt: Date | null;
}

const passkeyNotFound = () => notFound("Errors.User.Passkey.NotFound", "passkey not found");

/** RegisterPasskey: the options for navigator.credentials.create(), for the relying party `domain`. */
export async function registerPasskey(
  ctx: Ctx,
  input: { userId: string; domain: string; authenticator?: "platform" | "cross-platform" },
): Promise<Change & { passkeyId: string; options: Record<string, unknown> }> {
  const user = await authnSubject(ctx, input.userId, "register");
  humanOnly(user);
  await requireFactorAllowed(ctx, user.orgId, "passkey");
  const rpId = relyingPartyId(input.domain, authnSettings(ctx).externalUrl);
  const now = ctx.clock();
  await ctx.store.authn.dropPendingPasskeys(user.id, new Date(now.getTime() - REGISTRATION_TTL_MS));
  if ((await ctx.store.authn.countPasskeys(user.id)) >= MAX_PASSKEYS) {
    throw failedPrecondition("Errors.User.Passkey.LimitReached", `a user has at most ${MAX_PASSKEYS} passkeys`);
  }
  const existing = await ctx.store.authn.readyPasskeys(user.id, rpId);
  const options = await generateRegistrationOptions({
    rpName: user.instanceName,
    rpID: rpId,
    userName: user.loginName,
    userID: new TextEncoder().encode(user.id),
    userDisplayName: user.displayName,
    timeout: REGISTRATION_TTL_MS / 2,
    attestationType: "none",
    excludeCredentials: existing.map((p) => ({ id: p.credentialId as string, transports: p.transports })),
    authenticatorSelection: {
      residentKey: "required",
      requireResidentKey: true,
      userVerification: "required",
      ...(input.authenticator ? { authenticatorAttachment: input.authenticator } : {}),
    },
  });
  const passkeyId = newId();
  const challenge: RegistrationChallenge = { challenge: options.challenge, expiresAt: new Date(now.getTime() + REGISTRATION_TTL_MS).toISOString() };
  const at = await commit(
    ctx,
    async (tx) => {
      await tx.authn.addPasskey({ id: passkeyId, instanceId: ctx.instanceId, userId: user.id, rpId, challenge, createdAt: now });
      return userEvent(user, "user.passkey.added", { passkeyId, rpId });
    },
    now,
  );
  return { passkeyId, options: plainJson(options), at, orgId: user.orgId };
}

/** VerifyPasskeyRegistration: the authenticator's answer (RegistrationResponseJSON) makes the passkey ready. */
export async function verifyPasskeyRegistration(
  ctx: Ctx,
  input: { userId: string; passkeyId: string; credential: Record<string, unknown> | undefined; name: string },
): Promise<Change> {
  const user = await authnSubject(ctx, input.userId, "register");
  humanOnly(user);
  const name = input.name.trim();
  if (!name || name.length > 200)
    throw invalidArgument("Errors.User.Passkey.NameInvalid", "passkey_name must be 1 to 200 characters", { field: "passkey_name" });
  if (!input.credential)
    throw invalidArgument("Errors.User.Passkey.CredentialMissing", "public_key_credential is required", { field: "public_key_credential" });
  const row = input.passkeyId ? await ctx.store.authn.passkey(user.id, input.passkeyId) : null;
  if (!row) throw passkeyNotFound();
  if (row.verifiedAt) throw failedPrecondition("Errors.User.Passkey.AlreadyReady", "the passkey is registered already");
  const pending = row.challenge as RegistrationChallenge;
  const now = ctx.clock();
  if (new Date(pending.expiresAt).getTime() <= now.getTime()) {
    throw failedPrecondition("Errors.User.Passkey.RegistrationExpired", "the registration has expired: start a new one");
  }
  const credential = await verifiedRegistration(input.credential, pending.challenge, row.rpId, authnSettings(ctx).externalUrl);
  const at = await commit(
    ctx,
    async (tx) => {
      const done = await tx.authn.completePasskey(user.id, row.id, {
        name,
        credentialId: credential.id,
        publicKey: new Uint8Array(credential.publicKey),
        counter: BigInt(credential.counter),
        transports: credential.transports ?? [],
        verifiedAt: now,
      });
      if (!done) throw failedPrecondition("Errors.User.Passkey.AlreadyReady", "the passkey is registered already");
      return userEvent(user, "user.passkey.verified", { passkeyId: row.id, name });
    },
    now,
  );
  return { at, orgId: user.orgId };
}

async function verifiedRegistration(response: Record<string, unknown>, challenge: string, rpId: string, externalUrl: string) {
  const invalid = (why: string) =>
    invalidArgument("Errors.User.Passkey.Invalid", `the passkey registration was refused: ${why}`, { field: "public_key_credential" });
  let result: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    result = await verifyRegistrationResponse({
      response: response as unknown as Parameters<typeof verifyRegistrationResponse>[0]["response"],
      expectedChallenge: challenge,
      expectedOrigin: expectedOrigins(rpId, externalUrl),
      expectedRPID: rpId,
      requireUserVerification: true,
    });
  } catch (err) {
    // The library's messages say what did not match (challenge, origin, RP id, flags) and hold nothing secret.
    throw invalid(err instanceof Error ? err.message : "malformed credential");
  }
  if (!result.verified) throw invalid("not verified");
  return result.registrationInfo.credential;
}

/** ListPasskeys: the user's passkeys, ready and pending, oldest first. */
export async function listPasskeys(ctx: Ctx, userId: string): Promise<PasskeyView[]> {
  const user = await authnSubject(ctx, userId, "read");
  const rows = await ctx.store.authn.passkeys(user.id);
  return rows.map((p) => ({ id: p.id, name: p.name, ready: p.verifiedAt !== null, createdAt: p.createdAt, lastUsedAt: p.lastUsedAt }));
}

/** RemovePasskey. */
export async function removePasskey(ctx: Ctx, userId: string, passkeyId: string): Promise<Change> {
  const user = await authnSubject(ctx, userId, "remove");
  const at = await commit(ctx, async (tx) => {
    if (!passkeyId || !(await tx.authn.removePasskey(user.id, passkeyId))) throw passkeyNotFound();
    return userEvent(user, "user.passkey.removed", { passkeyId });
  });
  return { at, orgId: user.orgId };
}
