// Machine users' credentials besides PATs (pats.ts): RSA keys for the JWT
// profile grant and the client secret for the client credentials grant.
// Private keys and secrets are returned once and never stored: a key keeps
// only its public half, a secret only its SHA-256.
import type { Prisma } from "../../gen/prisma/client.js";
import { generateRsaKeyPair, normaliseRsaPublicKey } from "../crypto/rsa.js";
import { newOpaqueToken, sha256 } from "../crypto/tokens.js";
import { invalidateAuth } from "./auth-cache.js";
import type { Ctx } from "./context.js";
import { failedPrecondition, invalidArgument, notFound } from "./errors.js";
import { recordEvent } from "./events.js";
import { newId } from "./ids.js";
import { page } from "./list.js";
import { listScope } from "./permissions.js";
import { type TargetUser, targetUser } from "./users.js";

const MAX_PUBLIC_KEY_BYTES = 16 * 1024;

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
  let publicKey: string;
  let keyFile: KeyFile | undefined;
  if (input.publicKey !== undefined) {
    if (input.publicKey.byteLength > MAX_PUBLIC_KEY_BYTES) throw invalidArgument("Errors.User.Key.Invalid", "public_key is too large", { field: "public_key" });
    const parsed = normaliseRsaPublicKey(Buffer.from(input.publicKey).toString("utf8"));
    if ("error" in parsed) throw invalidArgument("Errors.User.Key.Invalid", parsed.error, { field: "public_key" });
    publicKey = parsed.pem;
  } else {
    const pair = await generateRsaKeyPair();
    publicKey = pair.publicKeyPem;
    keyFile = { type: "serviceaccount", keyId: id, key: pair.privateKeyPem, userId: user.id, expirationDate: input.expiresAt?.toISOString() };
  }
  await ctx.db.$transaction(async (tx) => {
    await tx.machineKey.create({ data: { id, instanceId: ctx.instanceId, userId: user.id, publicKey, expiresAt: input.expiresAt ?? null, createdAt: now } });
    await recordEvent(ctx, tx, {
      aggregateType: "user",
      aggregateId: user.id,
      orgId: user.orgId,
      type: "user.key.added",
      payload: { keyId: id, expiresAt: input.expiresAt?.toISOString(), generated: keyFile !== undefined },
    });
  });
  return { id, userId: user.id, orgId: user.orgId, createdAt: now, expiresAt: input.expiresAt ?? null, keyFile };
}

export async function listMachineKeys(
  ctx: Ctx,
  input: { userId?: string; page?: { offset?: bigint | number; limit?: number; asc?: boolean } },
): Promise<{ total: number; keys: MachineKeyView[] }> {
  const p = page(input.page);
  const where: Prisma.MachineKeyWhereInput = { instanceId: ctx.instanceId };
  if (input.userId) {
    const user = await targetUser(ctx, input.userId, "user.read", { selfAllowed: true });
    where.userId = user.id;
  } else {
    const orgs = listScope(ctx, "user.read");
    if (orgs) where.user = { orgId: { in: orgs } };
  }
  const dir = p.asc ? "asc" : "desc";
  const [total, rows] = await ctx.db.$transaction([
    ctx.db.machineKey.count({ where }),
    ctx.db.machineKey.findMany({
      where,
      orderBy: [{ createdAt: dir }, { id: dir }],
      skip: p.offset,
      take: p.limit,
      // Never the key itself.
      select: { id: true, userId: true, createdAt: true, expiresAt: true, user: { select: { orgId: true } } },
    }),
  ]);
  return { total, keys: rows.map(({ user, ...k }) => ({ ...k, orgId: user.orgId })) };
}

export async function removeMachineKey(ctx: Ctx, userId: string, keyId: string): Promise<Date> {
  const user = await targetUser(ctx, userId, "user.credential.write");
  const now = ctx.clock();
  await ctx.db.$transaction(async (tx) => {
    await invalidateAuth(tx, { userId: user.id });
    const { count } = await tx.machineKey.deleteMany({ where: { id: keyId, userId: user.id } });
    if (count === 0) throw notFound("Errors.User.Key.NotFound", "machine key not found");
    await recordEvent(ctx, tx, { aggregateType: "user", aggregateId: user.id, orgId: user.orgId, type: "user.key.removed", payload: { keyId } });
  });
  return now;
}

// ---------------------------------------------------------------- secret

/** A new client secret (256 random bits) replacing any previous one. */
export async function addSecret(ctx: Ctx, userId: string): Promise<{ clientSecret: string; createdAt: Date }> {
  const user = await targetUser(ctx, userId, "user.credential.write");
  machineOnly(user, "client secrets", "Errors.User.Secret.NotMachine");
  const clientSecret = newOpaqueToken();
  const now = ctx.clock();
  await ctx.db.$transaction(async (tx) => {
    const before = await tx.user.findUniqueOrThrow({ where: { id: user.id }, select: { secretCreatedAt: true } });
    await invalidateAuth(tx, { userId: user.id });
    await tx.user.update({ where: { id: user.id }, data: { secretHash: sha256(clientSecret), secretCreatedAt: now, updatedAt: now } });
    await recordEvent(ctx, tx, {
      aggregateType: "user",
      aggregateId: user.id,
      orgId: user.orgId,
      type: "user.secret.added",
      payload: { replaced: before.secretCreatedAt !== null },
    });
  });
  return { clientSecret, createdAt: now };
}

export async function removeSecret(ctx: Ctx, userId: string): Promise<Date> {
  const user = await targetUser(ctx, userId, "user.credential.write");
  const now = ctx.clock();
  await ctx.db.$transaction(async (tx) => {
    await invalidateAuth(tx, { userId: user.id });
    const { count } = await tx.user.updateMany({
      where: { id: user.id, secretHash: { not: null } },
      data: { secretHash: null, secretCreatedAt: null, updatedAt: now },
    });
    if (count === 0) throw notFound("Errors.User.Secret.NotFound", "the user has no client secret");
    await recordEvent(ctx, tx, { aggregateType: "user", aggregateId: user.id, orgId: user.orgId, type: "user.secret.removed" });
  });
  return now;
}
