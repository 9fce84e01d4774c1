// Machine users' credentials besides PATs (pats.ts): RSA keys for the JWT
// profile grant and the client secret for the client credentials grant.
// Private keys and secrets are returned once and never stored: a key keeps
// only its public half, a secret only its SHA-256.
import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import type { CredentialScope, CredentialView } from "../../store/credentials.js";
import type { Store } from "../../store/index.js";
import { listScope } from "../access/permissions.js";
import { commit, type EventInput, recordEvent, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { newId } from "../ids.js";
import { type ListTotal, type PageInput, page } from "../list.js";
import { keyMaterial } from "./key-material.js";
import { type TargetUser, targetUser } from "./user-access.js";

function machineOnly(user: TargetUser, what: string, id: string): void {
  if (user.type !== "MACHINE") throw failedPrecondition(id, `${what} belong to machine users only`);
}

// ---------------------------------------------------------------- keys

export interface MachineKeyView {
  id: string;
  userId: string;
  orgId: string;
  createdAt: Date;
  expiresAt: Date | null;
}

/** The service account key file of the spec, as the client downloads it. */
export interface KeyFile {
  type: "serviceaccount";
  keyId: string;
  key: string;
  userId: string;
  expirationDate?: string;
}

export async function addMachineKey(
  ctx: Ctx,
  input: { userId: string; expiresAt?: Date; publicKey?: Uint8Array },
): Promise<MachineKeyView & { keyFile?: KeyFile }> {
  const user = await targetUser(ctx, input.userId, "user.credential.write");
  machineOnly(user, "keys", "Errors.User.Key.NotMachine");
  const now = ctx.clock();
  if (input.expiresAt && input.expiresAt.getTime() <= now.getTime()) {
    throw invalidArgument("Errors.User.Key.ExpirationInPast", "expiration_date must be in the future", { field: "expiration_date" });
  }
  const id = newId();
  const { publicKeyPem: publicKey, privateKeyPem } = await keyMaterial(input.publicKey, "Errors.User.Key.Invalid");
  const keyFile: KeyFile | undefined = privateKeyPem
    ? { type: "serviceaccount", keyId: id, key: privateKeyPem, userId: user.id, expirationDate: input.expiresAt?.toISOString() }
    : undefined;
  await ctx.store.transaction(async (tx) => {
    await tx.credentials.addMachineKey({ id, instanceId: ctx.instanceId, userId: user.id, publicKey, expiresAt: input.expiresAt ?? null, createdAt: now });
    await recordEvent(ctx, tx, userEvent(user, "user.key.added", { keyId: id, expiresAt: input.expiresAt?.toISOString(), generated: keyFile !== undefined }));
  });
  return { id, userId: user.id, orgId: user.orgId, createdAt: now, expiresAt: input.expiresAt ?? null, keyFile };
}

export async function listMachineKeys(ctx: Ctx, input: { userId?: string; page?: PageInput }): Promise<ListTotal & { keys: MachineKeyView[] }> {
  const { credentials, ...total } = await listCredentials(ctx, "machineKey", input);
  return { ...total, keys: credentials };
}

export async function removeMachineKey(ctx: Ctx, userId: string, keyId: string): Promise<Date> {
  const user = await targetUser(ctx, userId, "user.credential.write");
  return removeCredential(
    ctx,
    user,
    async (tx, now) => {
      if (!(await tx.credentials.removeMachineKey(user.id, keyId))) return false;
      await tx.tokens.revokeIssued({ userId: user.id }, now, `key:${keyId}`);
      return true;
    },
    () => notFound("Errors.User.Key.NotFound", "machine key not found"),
    userEvent(user, "user.key.removed", { keyId }),
  );
}

/**
 * Removes one credential of `user` (already loaded and authorized by the caller): the tokens and clients cached
 * for the user go at once, `missing()` when there was nothing to remove, the event otherwise.
 */
export function removeCredential(
  ctx: Ctx,
  user: { id: string },
  remove: (tx: Store, now: Date) => Promise<boolean>,
  missing: () => Error,
  event: EventInput,
): Promise<Date> {
  return commit(ctx, async (tx, now) => {
    await tx.auth.invalidate({ userId: user.id });
    if (!(await remove(tx, now))) throw missing();
    return event;
  });
}

// ---------------------------------------------------------------- listing keys and PATs

/** One page of a user's credentials (the caller's own, or user.read in the user's org), or of every user's the caller may read. */
export async function listCredentials(
  ctx: Ctx,
  kind: "machineKey" | "pat",
  input: { userId?: string; page?: PageInput },
): Promise<ListTotal & { credentials: CredentialView[] }> {
  const p = page(input.page);
  const scope: CredentialScope = { instanceId: ctx.instanceId };
  if (input.userId) {
    scope.userId = (await targetUser(ctx, input.userId, "user.read", { selfAllowed: true })).id;
  } else {
    const orgs = listScope(ctx, "user.read");
    if (orgs) scope.orgIds = orgs;
  }
  return ctx.store.credentials.page(kind, scope, p);
}

// ---------------------------------------------------------------- secret

/** A new client secret (256 random bits) replacing any previous one. */
export async function addSecret(ctx: Ctx, userId: string): Promise<{ clientSecret: string; createdAt: Date }> {
  const user = await targetUser(ctx, userId, "user.credential.write");
  machineOnly(user, "client secrets", "Errors.User.Secret.NotMachine");
  const clientSecret = newOpaqueToken();
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    const before = await tx.credentials.secretCreatedAt(user.id);
    await tx.auth.invalidate({ userId: user.id });
    await tx.credentials.setSecret(user.id, sha256(clientSecret), now);
    // The tokens the old secret got go with it.
    const revokedTokens = await tx.tokens.revokeIssued({ userId: user.id }, now, "secret");
    await recordEvent(ctx, tx, userEvent(user, "user.secret.added", { replaced: before !== null, revokedTokens }));
  });
  return { clientSecret, createdAt: now };
}

export async function removeSecret(ctx: Ctx, userId: string): Promise<Date> {
  const user = await targetUser(ctx, userId, "user.credential.write");
  return removeCredential(
    ctx,
    user,
    async (tx, now) => {
      if (!(await tx.credentials.removeSecret(user.id, now))) return false;
      await tx.tokens.revokeIssued({ userId: user.id }, now, "secret");
      return true;
    },
    () => notFound("Errors.User.Secret.NotFound", "the user has no client secret"),
    userEvent(user, "user.secret.removed"),
  );
}
