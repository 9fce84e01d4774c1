import type { Ctx } from "./context.js";
import { invalidArgument, notFound } from "./errors.js";

export interface PasswordComplexity {
  minLength: number;
  requiresUppercase: boolean;
  requiresLowercase: boolean;
  requiresNumber: boolean;
  requiresSymbol: boolean;
  resourceOwner: "instance" | "org";
}

/** The documented instance default: at least 8 characters of all four classes. */
export const DEFAULT_PASSWORD_COMPLEXITY: PasswordComplexity = {
  minLength: 8,
  requiresUppercase: true,
  requiresLowercase: true,
  requiresNumber: true,
  requiresSymbol: true,
  resourceOwner: "instance",
};

/** The complexity in force for an organization (instance default until org overrides exist). */
export async function passwordComplexity(ctx: Ctx, orgId?: string): Promise<PasswordComplexity> {
  if (orgId) {
    const org = await ctx.db.organization.findFirst({ where: { id: orgId, instanceId: ctx.instanceId }, select: { id: true } });
    if (!org) throw notFound("Errors.Org.NotFound", "organization not found");
  }
  return DEFAULT_PASSWORD_COMPLEXITY;
}

export function checkPassword(password: string, policy: PasswordComplexity): void {
  const missing: string[] = [];
  if ([...password].length < policy.minLength) missing.push(`at least ${policy.minLength} characters`);
  if (policy.requiresUppercase && !/\p{Lu}/u.test(password)) missing.push("an uppercase letter");
  if (policy.requiresLowercase && !/\p{Ll}/u.test(password)) missing.push("a lowercase letter");
  if (policy.requiresNumber && !/\p{Nd}/u.test(password)) missing.push("a number");
  if (policy.requiresSymbol && !/[^\p{L}\p{N}\s]/u.test(password)) missing.push("a symbol");
  if (password.length > 1024) throw invalidArgument("Errors.User.Password.TooLong", "the password must be at most 1024 characters");
  if (missing.length) {
    throw invalidArgument("Errors.User.Password.Complexity", `the password does not meet the complexity policy: it needs ${missing.join(", ")}`);
  }
}
