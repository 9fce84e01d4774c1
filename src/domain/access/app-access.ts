// Reaching an application: loading it and checking the caller's permission
// on its project; and what every change of an application does besides its write.

import type { Store } from "../../store/index.js";
import type { EventInput } from "../audit/events.js";
import type { Ctx } from "../context.js";
import type { AppView } from "./apps.js";
import { projectEvent } from "./command.js";
import { appNotFound } from "./not-found.js";
import { targetProject } from "./project-access.js";
import type { ProjectView } from "./projects.js";

/** The application of the project, for a caller holding `permission` in the project's owning organization. */
export async function targetApp(
  ctx: Ctx,
  projectId: string,
  appId: string,
  permission: "project.app.read" | "project.app.write",
): Promise<{ project: ProjectView; app: AppView }> {
  const project = await targetProject(ctx, projectId, permission);
  const app = await ctx.store.apps.find(project.id, appId ?? "");
  if (!app) throw appNotFound();
  return { project, app };
}

/**
 * A change of an application (audited on its project), after dropping what
 * the caches derived from it: client records and app tokens are tagged with the org.
 */
export async function appChanged(tx: Store, project: ProjectView, type: string, payload: Record<string, unknown>): Promise<EventInput> {
  await tx.auth.invalidate({ orgId: project.orgId });
  return projectEvent(project, type, payload);
}
