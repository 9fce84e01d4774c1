// Keys of an application authenticating with private_key_jwt: only the
// public half is stored; a key generated here is handed out once as a key file.

import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument } from "../errors.js";
import { keyMaterial } from "../identity/key-material.js";
import { newId } from "../ids.js";
import { type ListTotal, type PageInput, page } from "../list.js";
import { appChanged, targetApp } from "./app-access.js";
import { commit, projectEvent } from "./command.js";
import { appKeyNotFound } from "./not-found.js";

export interface AppKeyView {
  id: string;
  appId: string;
  createdAt: Date;
  expiresAt: Date | null;
}

/** The key file of an application key, as the client downloads it. */
export interface AppKeyFile {
  type: "application";
  keyId: string;
  key: string;
  appId: string;
  clientId: string;
  expirationDate?: string;
}

export async function addAppKey(
  ctx: Ctx,
  input: { projectId: string; appId: string; expiresAt?: Date; publicKey?: Uint8Array },
): Promise<AppKeyView & { keyFile?: AppKeyFile }> {
  const { project, app } = await targetApp(ctx, input.projectId, input.appId, "project.app.write");
  if (app.authMethod !== "private_key_jwt")
    throw failedPrecondition("Errors.App.Key.NotSupported", `the application authenticates with ${app.authMethod}, not private_key_jwt`);
  const now = ctx.clock();
  if (input.expiresAt && input.expiresAt.getTime() <= now.getTime()) {
    throw invalidArgument("Errors.App.Key.ExpirationInPast", "expiration_date must be in the future", { field: "expiration_date" });
  }
  const id = newId();
  const { publicKeyPem: publicKey, privateKeyPem } = await keyMaterial(input.publicKey, "Errors.App.Key.Invalid");
  const keyFile: AppKeyFile | undefined = privateKeyPem
    ? { type: "application", keyId: id, key: privateKeyPem, appId: app.id, clientId: app.clientId, expirationDate: input.expiresAt?.toISOString() }
    : undefined;
  const key: AppKeyView = { id, appId: app.id, createdAt: now, expiresAt: input.expiresAt ?? null };
  await commit(
    ctx,
    async (tx) => {
      await tx.apps.insertKey({ ...key, instanceId: ctx.instanceId, publicKey });
      return projectEvent(project, "project.app.key.added", {
        appId: app.id,
        keyId: id,
        expiresAt: input.expiresAt?.toISOString(),
        generated: keyFile !== undefined,
      });
    },
    now,
  );
  return { ...key, keyFile };
}

export async function listAppKeys(ctx: Ctx, input: { projectId: string; appId: string; page?: PageInput }): Promise<ListTotal & { keys: AppKeyView[] }> {
  const { app } = await targetApp(ctx, input.projectId, input.appId, "project.app.read");
  const { rows, ...total } = await ctx.store.apps.keyPage(app.id, page(input.page));
  return { ...total, keys: rows };
}

export async function removeAppKey(ctx: Ctx, input: { projectId: string; appId: string; keyId: string }): Promise<Date> {
  const { project, app } = await targetApp(ctx, input.projectId, input.appId, "project.app.write");
  return commit(ctx, async (tx, now) => {
    if (!(await tx.apps.deleteKey(app.id, input.keyId ?? ""))) throw appKeyNotFound();
    const revokedTokens = await tx.tokens.revokeIssued({ appId: app.id }, now, `key:${input.keyId}`);
    return appChanged(tx, project, "project.app.key.removed", { appId: app.id, keyId: input.keyId, revokedTokens });
  });
}
