// Organization metadata: opaque byte values under text keys, readable with
// org.read and written with org.write.
import type { OrgMetadataRow } from "../../store/orgs.js";
import { commit } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { type ListTotal, type PageInput, page, type TextMatch } from "../list.js";
import { authorizedOrg } from "./orgs.js";

export const MAX_METADATA_VALUE_BYTES = 64 * 1024;
export const MAX_METADATA_PER_REQUEST = 100;
const MAX_KEY_LENGTH = 200;
/**
 * What one organization may hold, so that an organization's administrators cannot grow the instance's storage (and
 * every list of it) without bound. Sized for configuration-like data, well above what the per-user limits allow.
 */
export const MAX_METADATA_PER_ORG = 500;
export const MAX_METADATA_BYTES_PER_ORG = 1024 * 1024;

export type OrgMetadataView = OrgMetadataRow;

function validKey(key: string): string {
  if (!key) throw invalidArgument("Errors.Org.Metadata.Key.Missing", "metadata keys must not be empty", { field: "key" });
  if (key.length > MAX_KEY_LENGTH) {
    throw invalidArgument("Errors.Org.Metadata.Key.TooLong", `metadata keys must be at most ${MAX_KEY_LENGTH} characters`, { field: "key" });
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
  if (/[\u0000-\u001f\u007f]/.test(key))
    throw invalidArgument("Errors.Org.Metadata.Key.Invalid", "metadata keys must not contain control characters", { field: "key" });
  return key;
}

function validKeys(keys: readonly string[]): string[] {
  if (keys.length === 0) throw invalidArgument("Errors.Org.Metadata.Missing", "at least one metadata entry is required", { field: "metadata" });
  if (keys.length > MAX_METADATA_PER_REQUEST) {
    throw invalidArgument("Errors.Org.Metadata.TooMany", `at most ${MAX_METADATA_PER_REQUEST} metadata entries per request`, { field: "metadata" });
  }
  const valid = keys.map(validKey);
  if (new Set(valid).size !== valid.length)
    throw invalidArgument("Errors.Org.Metadata.Duplicate", "metadata keys must be unique in a request", { field: "key" });
  return valid;
}

/** Creates or replaces each entry. */
export async function setOrgMetadata(ctx: Ctx, input: { orgId: string; metadata: { key: string; value: Uint8Array }[] }): Promise<Date> {
  const orgId = (await authorizedOrg(ctx, input.orgId, "org.write")).id;
  const keys = validKeys(input.metadata.map((m) => m.key));
  for (const m of input.metadata) {
    if (m.value.byteLength === 0) throw invalidArgument("Errors.Org.Metadata.Value.Missing", "metadata values must not be empty", { field: "value" });
    if (m.value.byteLength > MAX_METADATA_VALUE_BYTES) {
      throw invalidArgument("Errors.Org.Metadata.TooLarge", "metadata values must be at most 64 KiB", { field: "value" });
    }
  }
  const now = ctx.clock();
  return commit(
    ctx,
    async (tx) => {
      // Serialises concurrent writers of one organization's metadata, so that the limits hold for their sum.
      await tx.members.lock(`org-metadata:${orgId}`);
      await tx.orgs.setMetadata(orgId, input.metadata, now);
      const usage = await tx.orgs.metadataUsage(orgId);
      if (usage.entries > MAX_METADATA_PER_ORG || usage.bytes > MAX_METADATA_BYTES_PER_ORG) {
        throw failedPrecondition(
          "Errors.Org.Metadata.LimitReached",
          `an organization holds at most ${MAX_METADATA_PER_ORG} metadata entries and ${MAX_METADATA_BYTES_PER_ORG / 1024} KiB of keys and values`,
        );
      }
      return { aggregateType: "org", aggregateId: orgId, orgId, type: "org.metadata.set", payload: { keys } };
    },
    now,
  );
}

export type OrgMetadataQuery = { kind: "key"; match: TextMatch };

export async function listOrgMetadata(
  ctx: Ctx,
  input: { orgId: string; page?: PageInput; queries: OrgMetadataQuery[] },
): Promise<ListTotal & { entries: OrgMetadataView[] }> {
  const orgId = (await authorizedOrg(ctx, input.orgId, "org.read")).id;
  const p = page(input.page);
  const { rows, ...total } = await ctx.store.orgs.metadataPage(
    orgId,
    input.queries.map((q) => q.match),
    p,
  );
  return { ...total, entries: rows };
}

/** Removes the entries with these keys; NotFound (and nothing removed) if one does not exist. */
export async function deleteOrgMetadata(ctx: Ctx, input: { orgId: string; keys: readonly string[] }): Promise<Date> {
  const orgId = (await authorizedOrg(ctx, input.orgId, "org.write")).id;
  const keys = validKeys([...new Set(input.keys)]);
  const now = ctx.clock();
  return commit(
    ctx,
    async (tx) => {
      if ((await tx.orgs.deleteMetadata(orgId, keys)) !== keys.length) throw notFound("Errors.Org.Metadata.NotFound", "a metadata key does not exist");
      return { aggregateType: "org", aggregateId: orgId, orgId, type: "org.metadata.removed", payload: { keys } };
    },
    now,
  );
}
