import type { Rotation, SigningKeyInfo, SigningKeyState, SigningKeys } from "../crypto/signing-keys.js";
import type { Ctx } from "./context.js";
import { notFound } from "./errors.js";
import { recordEvent } from "./events.js";
import { page } from "./list.js";
import { authorize } from "./permissions.js";

export interface InstanceView {
  id: string;
  name: string;
  defaultOrgId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export async function getInstance(ctx: Ctx): Promise<InstanceView> {
  authorize(ctx, "iam.read", null);
  const instance = await ctx.db.instance.findUnique({ where: { id: ctx.instanceId } });
  if (!instance) throw notFound("Errors.Instance.NotFound", "instance not found");
  return instance;
}

// ---------------------------------------------------------------- signing keys

type PageInput = { offset?: bigint | number; limit?: number; asc?: boolean };

/** The token-signing keys: metadata and state, never key material. */
export async function listSigningKeys(
  ctx: Ctx,
  keys: SigningKeys,
  input: { page?: PageInput; states: readonly SigningKeyState[] },
): Promise<{ total: number; keys: SigningKeyInfo[] }> {
  authorize(ctx, "iam.read", null);
  return keys.list({ ...page(input.page), states: input.states });
}

/**
 * A new active key now; the previous ones stay verify-only until the end of the
 * overlap, so no token issued before becomes unverifiable.
 */
export async function rotateSigningKey(ctx: Ctx, keys: SigningKeys): Promise<Rotation> {
  authorize(ctx, "iam.write", null);
  return keys.rotateNow((tx, r) =>
    recordEvent(ctx, tx, {
      aggregateType: "instance",
      aggregateId: ctx.instanceId,
      type: "instance.signingkey.rotated",
      payload: { keyId: r.id, alg: r.alg, retiredKeyIds: r.retiredKeyIds, verifyUntil: r.verifyUntil.toISOString() },
    }),
  );
}
