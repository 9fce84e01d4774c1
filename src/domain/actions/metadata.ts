// set_user_metadata: a target may store metadata on the user a function ran for ({"set_user_metadata": [{"key": "k",
// "value": "<base64>"}]}). svc writes it after the targets answered (what is being issued does not change), under the
// rules of SetUserMetadata (text keys, values up to 64 KiB, the per-user limits), in one transaction with an audit
// event naming the target (no editor: svc made the change). What breaks a rule is not written and is logged; issuing
// goes on either way.
import type { Logger } from "pino";
import type { Store } from "../../store/index.js";
import { eventRow, userEvent } from "../audit/events.js";
import { asDomainError } from "../errors.js";
import { checkMetadataUsage, validMetadata } from "../identity/user-input.js";
import { systemActor } from "../request-context.js";
import type { TargetAnswer } from "./functions.js";

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The entries of each answer's set_user_metadata, decoded; undefined when an answer's list is malformed. */
function entriesOf(answer: TargetAnswer): { key: string; value: Uint8Array }[] | undefined {
  const list = answer.body.set_user_metadata;
  if (list === undefined) return [];
  if (!Array.isArray(list)) return undefined;
  const out: { key: string; value: Uint8Array }[] = [];
  for (const e of list) {
    if (typeof e !== "object" || e === null) return undefined;
    const { key, value } = e as { key?: unknown; value?: unknown };
    if (typeof key !== "string" || typeof value !== "string" || value.length % 4 !== 0 || !BASE64.test(value)) return undefined;
    out.push({ key, value: Buffer.from(value, "base64") });
  }
  return out;
}

export async function storeAnsweredMetadata(
  o: { store: Store; instanceId: string; clock: () => Date; log: Logger },
  user: { id: string; orgId: string },
  answers: readonly TargetAnswer[],
): Promise<void> {
  for (const answer of answers) {
    const entries = entriesOf(answer);
    if (entries === undefined) {
      o.log.warn({ targetName: answer.targetName, userId: user.id }, "set_user_metadata must be a list of {key, value (base64)}: nothing was stored");
      continue;
    }
    if (entries.length === 0) continue;
    try {
      const metadata = validMetadata(entries);
      const now = o.clock();
      await o.store.transaction(async (tx) => {
        await tx.members.lock(`user-metadata:${user.id}`);
        await tx.users.setMetadata(user.id, metadata, now);
        checkMetadataUsage(await tx.users.metadataUsage(user.id));
        await tx.auth.invalidate({ userId: user.id });
        const event = userEvent(user, "user.metadata.set", { keys: metadata.map((m) => m.key), by: `action target ${answer.targetName}` });
        await tx.events.append(eventRow(systemActor(o.instanceId, o.clock), event));
      });
    } catch (err) {
      const refused = asDomainError(err);
      if (!refused || refused.kind === "Unavailable" || refused.kind === "Internal") throw err;
      o.log.warn({ targetName: answer.targetName, userId: user.id, reason: refused.message }, "set_user_metadata: nothing was stored");
    }
  }
}
