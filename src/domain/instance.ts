import type { Ctx } from "./context.js";
import { notFound } from "./errors.js";
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
