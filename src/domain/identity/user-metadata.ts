// User metadata: opaque byte values under text keys. Written with
// user.write, read with user.read; users may read their own.
import { commit, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { invalidArgument, notFound } from "../errors.js";
import { type ListTotal, type Page, type PageInput, page, type TextMatch } from "../list.js";
import { targetUser } from "./user-access.js";
import { checkMetadataUsage, MAX_METADATA_PER_REQUEST, validMetadata } from "./user-input.js";

export interface UserMetadataView {
  key: string;
  value: Uint8Array;
  orgId: string;
  createdAt: Date;
  updatedAt: Date;
}

/** Creates or replaces each entry. */
export async function setUserMetadata(ctx: Ctx, input: { userId: string; metadata: { key: string; value: Uint8Array }[] }): Promise<Date> {
  const user = await targetUser(ctx, input.userId, "user.write");
  if (input.metadata.length === 0) throw invalidArgument("Errors.User.Metadata.Missing", "at least one metadata entry is required", { field: "metadata" });
  const metadata = validMetadata(input.metadata);
  const now = ctx.clock();
  return commit(
    ctx,
    async (tx) => {
      // Serialises concurrent writers of one user's metadata, so that the limits hold for their sum.
      await tx.members.lock(`user-metadata:${user.id}`);
      await tx.users.setMetadata(user.id, metadata, now);
      checkMetadataUsage(await tx.users.metadataUsage(user.id));
      // Tokens with the metadata scope carry it (userinfo, introspection): drop their cached claims.
      await tx.auth.invalidate({ userId: user.id });
      // Keys only: values may be anything, including personal data.
      return userEvent(user, "user.metadata.set", { keys: metadata.map((m) => m.key) });
    },
    now,
  );
}

export type UserMetadataQuery = { kind: "key"; match: TextMatch };

export async function listUserMetadata(
  ctx: Ctx,
  input: { userId: string; page?: PageInput; queries: UserMetadataQuery[] },
): Promise<ListTotal & { entries: UserMetadataView[]; page: Page }> {
  const p = page(input.page);
  const user = await targetUser(ctx, input.userId, "user.read", { selfAllowed: true });
  const { entries: rows, ...total } = await ctx.store.users.metadataPage(
    user.id,
    input.queries.map((q) => q.match),
    p,
  );
  return { ...total, entries: rows.map((r) => ({ key: r.key, value: r.value, orgId: user.orgId, createdAt: r.createdAt, updatedAt: r.updatedAt })), page: p };
}

/** Removes all the given keys, or nothing when one of them does not exist. */
export async function deleteUserMetadata(ctx: Ctx, input: { userId: string; keys: string[] }): Promise<Date> {
  const user = await targetUser(ctx, input.userId, "user.write");
  if (input.keys.length === 0) throw invalidArgument("Errors.User.Metadata.Keys.Missing", "at least one key is required", { field: "keys" });
  if (input.keys.length > MAX_METADATA_PER_REQUEST) {
    throw invalidArgument("Errors.User.Metadata.TooMany", `at most ${MAX_METADATA_PER_REQUEST} keys per request`, { field: "keys" });
  }
  const keys = [...new Set(input.keys)];
  const now = ctx.clock();
  return commit(
    ctx,
    async (tx) => {
      if ((await tx.users.deleteMetadata(user.id, keys)) !== keys.length)
        throw notFound("Errors.User.Metadata.NotFound", "a metadata key to delete does not exist");
      await tx.auth.invalidate({ userId: user.id });
      return userEvent(user, "user.metadata.removed", { keys });
    },
    now,
  );
}
