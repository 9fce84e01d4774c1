// Organization metadata: opaque byte values under text keys, readable with
// org.read and written with org.write.
import type { Prisma } from "../../../gen/prisma/client.js";
import { authorize, type Permission } from "../access/permissions.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { invalidArgument, notFound } from "../errors.js";
import { page, type TextMatch, textFilter } from "../list.js";

export const MAX_METADATA_VALUE_BYTES = 64 * 1024;
export const MAX_METADATA_PER_REQUEST = 100;
const MAX_KEY_LENGTH = 200;

const orgNotFound = () => notFound("Errors.Org.NotFound", "organization not found");

export interface OrgMetadataView {
  key: string;
  value: Uint8Array;
  createdAt: Date;
  updatedAt: Date;
}

async function targetOrg(ctx: Ctx, orgId: string, permission: Permission): Promise<string> {
  if (!orgId) throw invalidArgument("Errors.Org.Id.Missing", "organization_id is required", { field: "organization_id" });
  const org = await ctx.db.organization.findFirst({ where: { id: orgId, instanceId: ctx.instanceId }, select: { id: true } });
  if (!org) throw orgNotFound();
  authorize(ctx, permission, org.id, orgNotFound);
  return org.id;
}

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
  const orgId = await targetOrg(ctx, input.orgId, "org.write");
  const keys = validKeys(input.metadata.map((m) => m.key));
  for (const m of input.metadata) {
    if (m.value.byteLength === 0) throw invalidArgument("Errors.Org.Metadata.Value.Missing", "metadata values must not be empty", { field: "value" });
    if (m.value.byteLength > MAX_METADATA_VALUE_BYTES) {
      throw invalidArgument("Errors.Org.Metadata.TooLarge", "metadata values must be at most 64 KiB", { field: "value" });
    }
  }
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    for (const m of input.metadata) {
      const value = new Uint8Array(m.value);
      await tx.db.orgMetadata.upsert({
        where: { orgId_key: { orgId, key: m.key } },
        create: { orgId, key: m.key, value, createdAt: now, updatedAt: now },
        update: { value, updatedAt: now },
      });
    }
    await recordEvent(ctx, tx, { aggregateType: "org", aggregateId: orgId, orgId, type: "org.metadata.set", payload: { keys } });
  });
  return now;
}

export type OrgMetadataQuery = { kind: "key"; match: TextMatch };

export async function listOrgMetadata(
  ctx: Ctx,
  input: { orgId: string; page?: { offset?: bigint | number; limit?: number; asc?: boolean }; queries: OrgMetadataQuery[] },
): Promise<{ total: number; entries: OrgMetadataView[] }> {
  const orgId = await targetOrg(ctx, input.orgId, "org.read");
  const p = page(input.page);
  const filters: Prisma.OrgMetadataWhereInput[] = input.queries.map((q) => ({
    key: textFilter(q.match),
  }));
  const where: Prisma.OrgMetadataWhereInput = { orgId, AND: filters };
  const [total, entries] = await ctx.db.$transaction([
    ctx.db.orgMetadata.count({ where }),
    ctx.db.orgMetadata.findMany({
      where,
      orderBy: { key: p.asc ? "asc" : "desc" },
      skip: p.offset,
      take: p.limit,
      select: { key: true, value: true, createdAt: true, updatedAt: true },
    }),
  ]);
  return { total, entries };
}

/** Removes the entries with these keys; NotFound (and nothing removed) if one does not exist. */
export async function deleteOrgMetadata(ctx: Ctx, input: { orgId: string; keys: readonly string[] }): Promise<Date> {
  const orgId = await targetOrg(ctx, input.orgId, "org.write");
  const keys = validKeys([...new Set(input.keys)]);
  const now = ctx.clock();
  await ctx.store.transaction(async (tx) => {
    const { count } = await tx.db.orgMetadata.deleteMany({ where: { orgId, key: { in: keys } } });
    if (count !== keys.length) throw notFound("Errors.Org.Metadata.NotFound", "a metadata key does not exist");
    await recordEvent(ctx, tx, { aggregateType: "org", aggregateId: orgId, orgId, type: "org.metadata.removed", payload: { keys } });
  });
  return now;
}
