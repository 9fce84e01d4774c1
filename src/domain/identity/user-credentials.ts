// Machine users' credentials besides PATs (pats.ts): RSA keys for the JWT
// profile grant and the client secret for the client credentials grant.
// Private keys and secrets are returned once and never stored: a key keeps
// only its public half, a secret only its SHA-256.
import type { Prisma } from "../../../gen/prisma/client.js";
import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import { authorizeOverRoles, listScope } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { newId } from "../ids.js";
import { inCreationOrder, page } from "../list.js";
import { keyMaterial } from "./key-material.js";
import { type TargetUser, targetUser } from "./users.js";

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
  await authorizeOverRoles(ctx, user.id);
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
    await tx.db.machineKey.create({ data: { id, instanceId: ctx.instanceId, userId: user.id, publicKey, expiresAt: input.expiresAt ?? null, createdAt: now } });
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

export async function listMachineKeys(ctx: Ctx, input: { userId?: string; page?: PageInput }): Promise<{ total: number; keys: MachineKeyView[] }> {
  const { total, credentials } = await listCredentials(ctx, ctx.db.machineKey, input);
  return { total, keys: credentials };
}

export async function removeMachineKey(ctx: Ctx, userId: string, keyId: string): Promise<Date> {
  const user = await targetUser(ctx, userId, "user.credential.write");
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId: user.id });
    const { count } = await tx.db.machineKey.deleteMany({ where: { id: keyId, userId: user.id } });
    if (count === 0) throw notFound("Errors.User.Key.NotFound", "machine key not found");
    await recordEvent(ctx, tx, { aggregateType: "user", aggregateId: user.id, orgId: user.orgId, type: "user.key.removed", payload: { keyId } });
  });
  return now;
}

// ---------------------------------------------------------------- listing keys and PATs

type PageInput = { offset?: bigint | number; limit?: number; asc?: boolean };

/** What a credential list shows: never the key or the token itself. */
const CREDENTIAL_SELECT = { id: true, userId: true, createdAt: true, expiresAt: true, user: { select: { orgId: true } } } as const;
type CredentialWhere = { instanceId: string; userId?: string; user?: { orgId: { in: string[] } } };
type CredentialRow = { id: string; userId: string; createdAt: Date; expiresAt: Date | null; user: { orgId: string } };

/** The tables listed alike: machine keys and personal access tokens. */
interface CredentialTable {
  count(args: { where: CredentialWhere }): Prisma.PrismaPromise<number>;
  findMany(args: { where: CredentialWhere; select: typeof CREDENTIAL_SELECT } & ReturnType<typeof inCreationOrder>): Prisma.PrismaPromise<CredentialRow[]>;
}

/** One page of a user's credentials (the caller's own, or user.read in the user's org), or of every user's the caller may read. */
export async function listCredentials(
  ctx: Ctx,
  table: CredentialTable,
  input: { userId?: string; page?: PageInput },
): Promise<{ total: number; credentials: (Omit<CredentialRow, "user"> & { orgId: string })[] }> {
  const p = page(input.page);
  const where: CredentialWhere = { instanceId: ctx.instanceId };
  if (input.userId) {
    where.userId = (await targetUser(ctx, input.userId, "user.read", { selfAllowed: true })).id;
  } else {
    const orgs = listScope(ctx, "user.read");
    if (orgs) where.user = { orgId: { in: orgs } };
  }
  const [total, rows] = await ctx.db.$transaction([table.count({ where }), table.findMany({ where, ...inCreationOrder(p), select: CREDENTIAL_SELECT })]);
  return { total, credentials: rows.map(({ user, ...c }) => ({ ...c, orgId: user.orgId })) };
}

// ---------------------------------------------------------------- secret

/** A new client secret (256 random bits) replacing any previous one. */
export async function addSecret(ctx: Ctx, userId: string): Promise<{ clientSecret: string; createdAt: Date }> {
  const user = await targetUser(ctx, userId, "user.credential.write");
  await authorizeOverRoles(ctx, user.id);
  machineOnly(user, "client secrets", "Errors.User.Secret.NotMachine");
  const clientSecret = newOpaqueToken();
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    const before = await tx.db.user.findUniqueOrThrow({ where: { id: user.id }, select: { secretCreatedAt: true } });
    await tx.auth.invalidate({ userId: user.id });
    await tx.db.user.update({ where: { id: user.id }, data: { secretHash: sha256(clientSecret), secretCreatedAt: now, updatedAt: now } });
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
  await ctx.store.transaction(async (tx) => {
    await tx.auth.invalidate({ userId: user.id });
    const { count } = await tx.db.user.updateMany({
      where: { id: user.id, secretHash: { not: null } },
      data: { secretHash: null, secretCreatedAt: null, updatedAt: now },
    });
    if (count === 0) throw notFound("Errors.User.Secret.NotFound", "the user has no client secret");
    await recordEvent(ctx, tx, { aggregateType: "user", aggregateId: user.id, orgId: user.orgId, type: "user.secret.removed" });
  });
  return now;
}
