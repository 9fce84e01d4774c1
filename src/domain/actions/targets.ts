// Actions, administered: targets (the endpoints svc calls, each with a signing key shown once and sealed at rest; the
// executions are in executions.ts). The instance's targets are IAM_OWNER's (iam.action.*); an organization's own
// targets, for its events only, its owners' too (action.* in that organization). Every write drops the runtimes'
// cached executions, on every replica (the signing-key invalidation).
import { randomBytes } from "node:crypto";
import { actionTargetAad } from "../../crypto/sealer.js";
import type { TargetChange, TargetRow } from "../../store/actions.js";
import { authorize, readableOrgs } from "../access/permissions.js";
import { commit } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { type DomainError, invalidArgument, notFound, permissionDenied } from "../errors.js";
import { authnSettings } from "../identity/authn/access.js";
import { newId } from "../ids.js";
import { type ListTotal, type Page, page } from "../list.js";
import { existingOrg, orgNotFound } from "../orgs/orgs.js";

export const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_TIMEOUT_MS = 30_000;
const MAX_NAME = 200;
const MAX_ENDPOINT = 2_000;
/** How long a target's failed deliveries count as recent (GetTarget). */
const RECENT_MS = 24 * 3600_000;

export const TARGET_KINDS = ["call", "webhook", "async"] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

export interface TargetInput {
  name?: string;
  endpoint?: string;
  timeoutMs?: number;
  interruptOnError?: boolean;
  kind?: TargetKind;
}

export interface TargetView {
  id: string;
  name: string;
  endpoint: string;
  timeoutMs: number;
  interruptOnError: boolean;
  kind: TargetKind;
  /** null: the instance's. */
  orgId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export const targetNotFound = () => notFound("Errors.Action.Target.NotFound", "target not found");
const view = (r: TargetRow): TargetView => ({
  id: r.id,
  name: r.name,
  endpoint: r.endpoint,
  timeoutMs: r.timeoutMs,
  interruptOnError: r.interruptOnError,
  kind: (TARGET_KINDS as readonly string[]).includes(r.kind) ? (r.kind as TargetKind) : "call",
  orgId: r.orgId,
  createdAt: r.createdAt,
  updatedAt: r.updatedAt,
});

/**
 * May the caller read or write what belongs to `orgId` (null: the instance's)? The instance's targets and executions
 * need iam.action.*; an organization's, action.* there (a caller without a role there is told NotFound by `hidden`).
 */
export function authorizeActions(ctx: Ctx, access: "read" | "write", orgId: string | null, hidden: () => DomainError = targetNotFound): void {
  if (orgId === null) authorize(ctx, access === "read" ? "iam.action.read" : "iam.action.write", null);
  else authorize(ctx, access === "read" ? "action.read" : "action.write", orgId, hidden);
}

/** The organizations whose actions the caller may read: undefined for all of them (and the instance's), else a list. */
export function actionScope(ctx: Ctx): string[] | undefined {
  if (readableOrgs(ctx, "iam.action.read") === "all") return undefined;
  const orgs = readableOrgs(ctx, "action.read");
  if (orgs === "all") return undefined;
  if (orgs.length === 0) throw permissionDenied("Errors.Permission.Denied", "missing permission iam.action.read");
  return orgs;
}
/** The caller's scope narrowed to one organization when a list asks for it (one out of scope: none). */
export function scopeTo(scope: string[] | undefined, orgId: string | undefined): string[] | undefined {
  if (!orgId) return scope;
  return scope ? scope.filter((o) => o === orgId) : [orgId];
}
const event = (id: string, type: string, payload: Record<string, unknown> = {}) => ({ aggregateType: "action_target", aggregateId: id, type, payload });

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Whether a host name is a loopback one (localhost, 127.0.0.0/8, [::1]). */
export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK.has(hostname) || hostname.endsWith(".localhost") || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * An endpoint svc may call: an absolute https URL, or http on a loopback host (what travels to a target is personal
 * data: never in clear over a network), without credentials or a fragment.
 */
function checkedEndpoint(endpoint: string): string {
  const field = { field: "endpoint" };
  if (!endpoint) throw invalidArgument("Errors.Action.Target.Endpoint.Missing", "endpoint is required", field);
  if (endpoint.length > MAX_ENDPOINT || !URL.canParse(endpoint)) {
    throw invalidArgument("Errors.Action.Target.Endpoint.Invalid", "endpoint must be an absolute URL", field);
  }
  const url = new URL(endpoint);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
    throw invalidArgument("Errors.Action.Target.Endpoint.Invalid", "endpoint must be https (http only on a loopback host)", field);
  }
  if (url.username || url.password || url.hash) {
    throw invalidArgument("Errors.Action.Target.Endpoint.Invalid", "endpoint must not carry credentials or a fragment", field);
  }
  return url.href;
}

function checkedName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw invalidArgument("Errors.Action.Target.Name.Missing", "name is required", { field: "name" });
  if (trimmed.length > MAX_NAME) throw invalidArgument("Errors.Action.Target.Name.Invalid", `name must be at most ${MAX_NAME} characters`, { field: "name" });
  return trimmed;
}

function checkedTimeout(ms: number): number {
  if (!Number.isInteger(ms) || ms < 1_000 || ms > MAX_TIMEOUT_MS) {
    throw invalidArgument("Errors.Action.Target.Timeout.Invalid", "timeout must be between 1 and 30 seconds, in whole milliseconds", { field: "timeout" });
  }
  return ms;
}

/** A new signing key: 32 random bytes, handed out base64url once. */
function newSigningKey(ctx: Ctx, id: string): { key: string; sealed: Uint8Array } {
  const raw = randomBytes(32);
  return { key: raw.toString("base64url"), sealed: authnSettings(ctx).sealer.seal(raw, actionTargetAad(ctx.instanceId, id)) };
}

export async function createTarget(ctx: Ctx, input: Required<TargetInput> & { orgId?: string }): Promise<{ id: string; at: Date; signingKey: string }> {
  const orgId = input.orgId || null;
  authorizeActions(ctx, "write", orgId, orgNotFound);
  if (orgId) await existingOrg(ctx, orgId);
  const name = checkedName(input.name);
  const endpoint = checkedEndpoint(input.endpoint);
  const timeoutMs = checkedTimeout(input.timeoutMs);
  const id = newId();
  const { key, sealed } = newSigningKey(ctx, id);
  const at = await commit(ctx, async (tx, now) => {
    await tx.actions.insertTarget({
      id,
      instanceId: ctx.instanceId,
      name,
      endpoint,
      timeoutMs,
      interruptOnError: input.interruptOnError,
      signingKeyEnc: sealed,
      kind: input.kind,
      orgId,
      createdAt: now,
      updatedAt: now,
    });
    return { ...event(id, "action.target.added", { name, endpoint, kind: input.kind }), orgId };
  });
  return { id, at, signingKey: key };
}

async function targetFor(ctx: Ctx, id: string, access: "read" | "write"): Promise<TargetRow> {
  if (!id) throw invalidArgument("Errors.Action.Target.Id.Missing", "id is required", { field: "id" });
  const row = await ctx.store.actions.findTarget(ctx.instanceId, id);
  if (!row) {
    // Nothing to hide from one who may see every target; anyone else learns no more than from a target elsewhere.
    actionScope(ctx);
    throw targetNotFound();
  }
  authorizeActions(ctx, access, row.orgId);
  return row;
}

export async function updateTarget(ctx: Ctx, id: string, input: TargetInput, rotateKey: boolean): Promise<{ at: Date; signingKey?: string }> {
  const row = await targetFor(ctx, id, "write");
  const change: Omit<TargetChange, "updatedAt"> = {};
  if (input.name !== undefined) change.name = checkedName(input.name);
  if (input.endpoint !== undefined) change.endpoint = checkedEndpoint(input.endpoint);
  if (input.timeoutMs !== undefined) change.timeoutMs = checkedTimeout(input.timeoutMs);
  if (input.interruptOnError !== undefined) change.interruptOnError = input.interruptOnError;
  if (input.kind !== undefined) change.kind = input.kind;
  const rotated = rotateKey ? newSigningKey(ctx, id) : undefined;
  if (rotated) change.signingKeyEnc = rotated.sealed;
  const at = await commit(ctx, async (tx, now) => {
    if (!(await tx.actions.updateTarget(ctx.instanceId, id, { ...change, updatedAt: now }))) throw targetNotFound();
    await tx.auth.invalidate({ keys: true });
    const { signingKeyEnc: _sealed, ...shown } = change;
    return { ...event(id, "action.target.changed", { ...shown, keyRotated: Boolean(rotated) }), orgId: row.orgId };
  });
  return { at, ...(rotated ? { signingKey: rotated.key } : {}) };
}

export async function deleteTarget(ctx: Ctx, id: string): Promise<Date> {
  const row = await targetFor(ctx, id, "write");
  return commit(ctx, async (tx, now) => {
    if (!(await tx.actions.deleteTarget(ctx.instanceId, id, now))) throw targetNotFound();
    await tx.auth.invalidate({ keys: true });
    return { ...event(id, "action.target.removed", { name: row.name }), orgId: row.orgId };
  });
}

/** The target, and how many of its deliveries failed in the last 24 hours (retrying or dead). */
export async function getTarget(ctx: Ctx, id: string): Promise<TargetView & { recentFailures: number }> {
  const row = await targetFor(ctx, id, "read");
  const recentFailures = await ctx.store.outbox.recentFailures(ctx.instanceId, id, new Date(ctx.clock().getTime() - RECENT_MS));
  return { ...view(row), recentFailures };
}

/** The instance's targets, or those of the organizations where the caller may read actions. */
export async function listTargets(ctx: Ctx, window: Page = page(undefined), orgId?: string): Promise<ListTotal & { targets: TargetView[] }> {
  const scope = scopeTo(actionScope(ctx), orgId);
  const { rows, ...total } = await ctx.store.actions.pageTargets(ctx.instanceId, window, scope);
  return { ...total, targets: rows.map(view) };
}

export function checkedKind(kind: string): TargetKind {
  if (!(TARGET_KINDS as readonly string[]).includes(kind)) {
    throw invalidArgument("Errors.Action.Target.Kind.Invalid", `kind must be one of ${TARGET_KINDS.join(", ")}`, { field: "kind" });
  }
  return kind as TargetKind;
}
