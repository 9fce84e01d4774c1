// The user's half of the Device Authorization Grant: the code typed at /ui/login/device starts an auth request of the
// device's application (prompt=consent, so the user is asked with the application's name and scopes), which the
// hosted login then signs the user in for like any other. Its answer goes back to the hosted login's own done page,
// never to a client: the request's PKCE challenge has no known verifier, so its code is worth nothing at the token
// endpoint; the device's poll redeems the request itself (grants/device-code.ts).
//
// Guessing: a wrong code counts against the browser's address and against all entries of the instance together, each
// with its own limit per window (DEVICE_CODE_LIMITS), so that the codes tried within a code's lifetime stay a
// negligible share of the 20^8 possible ones whatever the number of addresses an attacker has.
import { createHash, randomBytes } from "node:crypto";
import { authorize } from "../access/permissions.js";
import { eventRow } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { DomainError, failedPrecondition } from "../errors.js";
import { newId } from "../ids.js";
import { type FailureLimits, rateLimited } from "../limits.js";
import { normalizeUserCode, userCodeHash } from "./device.js";

/** Wrong user codes allowed per window: per address, and for the whole instance (see the file's comment). */
export const DEVICE_CODE_LIMITS = { perAddress: 10, perInstance: 1_000, windowSeconds: 600 } as const;
/** The key all entries of the instance count against (the limiter's per-key limit is perInstance). */
const INSTANCE_KEY = "device:user-code";

export const DeviceErrors = {
  UserCodeInvalid: "Errors.Device.UserCode.Invalid",
  UserCodeUsed: "Errors.Device.UserCode.Used",
} as const;

const invalidCode = () => new DomainError("InvalidArgument", DeviceErrors.UserCodeInvalid, "the code is wrong or has expired");

/** The keys of an entry: the address (its own namespace, apart from other limits' counts) and the instance's. */
const keysOf = (peer: string | undefined) => [...(peer ? [`ip:device:${peer}`] : []), INSTANCE_KEY];

/**
 * Starts the sign-in of the device authorization whose user code was typed: the id of its auth request (the same one
 * again while it is open, so a reload goes on). `doneUrl`: the hosted login's page the request answers to.
 */
export async function enterUserCode(ctx: Ctx, limits: FailureLimits, typed: string, doneUrl: string): Promise<string> {
  authorize(ctx, "session.link", null);
  const keys = keysOf(ctx.peer);
  const wait = limits.blockedFor(keys);
  if (wait > 0) throw rateLimited(wait);
  const now = ctx.clock();
  const code = normalizeUserCode(typed);
  const device = code ? await ctx.store.deviceAuthorizations.byUserCode(ctx.instanceId, userCodeHash(ctx.instanceId, code), now) : null;
  if (!device) {
    const blocked = await limits.failed(keys);
    if (blocked > 0) throw rateLimited(blocked);
    throw invalidCode();
  }
  if (device.authRequestId) return stillOpen(ctx, device.authRequestId);
  const id = newId();
  const linked = await ctx.store.transaction(async (tx) => {
    await tx.authRequests.create({
      id,
      instanceId: ctx.instanceId,
      appId: device.appId,
      clientId: device.clientId,
      redirectUri: doneUrl,
      scopes: device.scopes,
      state: null,
      nonce: null,
      // A challenge whose verifier no one keeps: the code the request's answer carries cannot be redeemed.
      codeChallenge: createHash("sha256").update(randomBytes(32).toString("base64url")).digest("base64url"),
      codeChallengeMethod: "S256",
      prompt: ["consent"],
      maxAge: null,
      loginHint: null,
      uiLocales: [],
      hintUserId: null,
      expiresAt: device.expiresAt,
      createdAt: now,
    });
    if (!(await tx.deviceAuthorizations.link(ctx.instanceId, device.id, id, now))) return false;
    await tx.events.append(
      eventRow(ctx, {
        aggregateType: "oidc.device_authorization",
        aggregateId: device.id,
        type: "oidc.device_authorization.code_entered",
        payload: { clientId: device.clientId, authRequestId: id, peer: ctx.peer ?? null },
      }),
    );
    return true;
  });
  if (linked) return id;
  // Typed in two browsers at once: the first one's request.
  const again = await ctx.store.deviceAuthorizations.byUserCode(ctx.instanceId, userCodeHash(ctx.instanceId, code as string), now);
  if (!again?.authRequestId) throw invalidCode();
  return stillOpen(ctx, again.authRequestId);
}

/** The linked request while it is open; a code whose sign-in is over is used up. */
async function stillOpen(ctx: Ctx, authRequestId: string): Promise<string> {
  const r = await ctx.store.authRequests.find(ctx.instanceId, authRequestId);
  if (!r || r.finishedAt) throw failedPrecondition(DeviceErrors.UserCodeUsed, "this code was already used");
  return r.id;
}
