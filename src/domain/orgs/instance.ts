import type { Rotation, SigningKeyInfo, SigningKeyState, SigningKeys } from "../../crypto/signing-keys.js";
import { authorize } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { DomainError, notFound } from "../errors.js";
import { exactTotal, type ListTotal, type PageInput, page } from "../list.js";

export interface InstanceView {
  id: string;
  name: string;
  defaultOrgId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export async function getInstance(ctx: Ctx): Promise<InstanceView> {
  authorize(ctx, "iam.read", null);
  const instance = await ctx.store.orgs.instance(ctx.instanceId);
  if (!instance) throw notFound("Errors.Instance.NotFound", "instance not found");
  return instance;
}

// ---------------------------------------------------------------- signing keys

/** The token-signing keys: metadata and state, never key material. */
export async function listSigningKeys(
  ctx: Ctx,
  keys: SigningKeys,
  input: { page?: PageInput; states: readonly SigningKeyState[] },
): Promise<ListTotal & { keys: SigningKeyInfo[] }> {
  authorize(ctx, "iam.read", null);
  // Every key of the instance is read (a handful): the total is exact.
  const { total, keys: rows } = await keys.list({ ...page(input.page), states: input.states });
  return { ...exactTotal(total), keys: rows };
}

/**
 * How many keys of one algorithm may verify at once after a rotation on demand: the active one and those still in
 * their overlap. Every rotation keeps the previous keys in the JWKS that every client downloads and in every replica's
 * memory, so a script rotating in a loop must not grow them without bound; scheduled rotations are not counted
 * against it.
 */
export const MAX_VERIFYING_KEYS = 10;

/**
 * A new active key of each algorithm now; the previous ones stay verify-only until the end of the overlap, so no
 * token issued before becomes unverifiable. Refused with ResourceExhausted when it would leave more than
 * MAX_VERIFYING_KEYS of one algorithm verifying.
 */
export async function rotateSigningKey(ctx: Ctx, keys: SigningKeys): Promise<Rotation> {
  authorize(ctx, "iam.write", null);
  return keys.rotateNow(async (tx, r) => {
    // Counted inside the rotation's transaction (serialised across replicas): refusing rolls the new keys back.
    const verifying = await tx.keys.verifyingUntil(ctx.instanceId, r.createdAt);
    const perAlg = new Map<string, number>();
    for (const k of verifying) perAlg.set(k.alg, (perAlg.get(k.alg) ?? 0) + 1);
    if ([...perAlg.values()].some((n) => n > MAX_VERIFYING_KEYS)) {
      const next = verifying.find((k) => k.verifyUntil)?.verifyUntil;
      throw new DomainError(
        "ResourceExhausted",
        "Errors.SigningKey.TooManyRotations",
        `at most ${MAX_VERIFYING_KEYS} signing keys of one algorithm may verify at once; the next one leaves its overlap at ${next?.toISOString() ?? "an unknown time"}`,
      );
    }
    await recordEvent(ctx, tx, {
      aggregateType: "instance",
      aggregateId: ctx.instanceId,
      type: "instance.signingkey.rotated",
      payload: { keyId: r.id, alg: r.alg, keys: r.keys, retiredKeyIds: r.retiredKeyIds, verifyUntil: r.verifyUntil.toISOString() },
    });
  });
}
