// Self-registration: a login client (user.register) may create what a person signing up creates for itself: one
// human user with a profile and a password, in an organization whose login settings allow registration. Nothing
// that would hand out more than the person could claim: no machine users, no metadata, no chosen id, no imported
// hash, no e-mail or phone marked verified, no SCIM provisioning. Everyone else needs user.write.
import { authorize, holds } from "../access/permissions.js";
import type { Ctx } from "../context.js";
import { permissionDenied } from "../errors.js";
import { orgNotFound } from "../orgs/orgs.js";
import { effectiveSetting } from "../settings/settings.js";
import type { CreateUserInput } from "./user-create.js";

const refused = (why: string) => permissionDenied("Errors.User.Register.Denied", `self-registration ${why}`);

/** Allows a CreateUser by user.write, or as a self-registration the organization's login settings allow. */
export async function authorizeUserCreate(ctx: Ctx, input: CreateUserInput): Promise<void> {
  if (holds(ctx, "user.write", input.orgId) || !holds(ctx, "user.register", input.orgId)) {
    authorize(ctx, "user.write", input.orgId, orgNotFound);
    return;
  }
  const h = input.human;
  if (!h || input.machine || input.scim) throw refused("creates human users only");
  if (input.userId !== undefined || (input.metadata?.length ?? 0) > 0) throw refused("sets no user id and no metadata");
  if (h.hashedPassword || h.emailVerified || h.phoneVerified) throw refused("imports no password hash and verifies no contact data");
  const login = await effectiveSetting(ctx, "login", input.orgId);
  if (!login.allowRegister) {
    throw permissionDenied("Errors.User.Register.NotAllowed", "the login settings of the organization do not allow self-registration");
  }
}
