// Personal access tokens of machine users: opaque, 256 random bits, stored
// as SHA-256, shown once.

import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import { recordEvent, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { newId } from "../ids.js";
import type { ListTotal, PageInput } from "../list.js";
import { hiddenTargetUser } from "./user-access.js";
import { listCredentials, removeCredential } from "./user-credentials.js";

const tokenNotFound = () => notFound("Errors.User.PAT.NotFound", "personal access token not found");

export interface PatView {
  id: string;
  userId: string;
  orgId: string;
  createdAt: Date;
  expiresAt: Date | null;
}

export async function addPersonalAccessToken(ctx: Ctx, userId: string, expiresAt?: Date): Promise<PatView & { token: string }> {
  const user = await hiddenTargetUser(ctx, userId, "user.credential.write");
  if (user.type !== "MACHINE") throw failedPrecondition("Errors.User.PAT.NotMachine", "personal access tokens belong to machine users only");
  const now = ctx.clock();
  if (expiresAt && expiresAt.getTime() <= now.getTime()) {
    throw invalidArgument("Errors.User.PAT.ExpirationInPast", "expiration_date must be in the future", { field: "expiration_date" });
  }
  const token = newOpaqueToken();
  const id = newId();
  await ctx.store.transaction(async (tx) => {
    await tx.credentials.addPat({ id, instanceId: ctx.instanceId, userId: user.id, tokenHash: sha256(token), expiresAt: expiresAt ?? null, createdAt: now });
    await recordEvent(ctx, tx, userEvent(user, "user.pat.added", { tokenId: id, expiresAt: expiresAt?.toISOString() }));
  });
  return { id, userId: user.id, orgId: user.orgId, createdAt: now, expiresAt: expiresAt ?? null, token };
}

export async function listPersonalAccessTokens(ctx: Ctx, input: { userId?: string; page?: PageInput }): Promise<ListTotal & { tokens: PatView[] }> {
  const { credentials, ...total } = await listCredentials(ctx, "pat", input);
  return { ...total, tokens: credentials };
}

export async function removePersonalAccessToken(ctx: Ctx, userId: string, tokenId: string): Promise<Date> {
  const user = await hiddenTargetUser(ctx, userId, "user.credential.write");
  return removeCredential(ctx, user, (tx) => tx.credentials.removePat(user.id, tokenId), tokenNotFound, userEvent(user, "user.pat.removed", { tokenId }));
}
