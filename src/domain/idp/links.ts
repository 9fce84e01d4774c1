// Links of users to their accounts at external providers (AddIDPLink, ListIDPLinks, RemoveIDPLink). A link lets whoever
// holds the account at the provider sign in as the user, so adding or removing one follows the rule of changing a
// user's authenticators (identity/authn/access.ts): the user itself or a login client acting for it, through a
// session of the user the request presents that satisfies the sign-in policy with a recent proof; or a user.write
// holder in the user's organization who could grant the user's roles.
import type { AuthnSubject } from "../../store/authn.js";
import type { IdpLinkRow } from "../../store/idps.js";
import { authorize, authorizeOverRoles, hasInstancePermission, holds } from "../access/permissions.js";
import { commit, userEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors.js";
import { assertPresentedProof } from "../identity/authn/access.js";
import { userNotFound } from "../identity/user-access.js";
import { type ListTotal, type Page, page } from "../list.js";
import type { SensitiveChange } from "../sessions/policy.js";
import { idpNotFound } from "./providers.js";

export interface LinkInput {
  idpId: string;
  externalUserId: string;
  externalUserName: string;
}

async function subject(ctx: Ctx, userId: string): Promise<AuthnSubject> {
  if (!userId) throw invalidArgument("Errors.User.Id.Missing", "user_id is required", { field: "user_id" });
  const user = await ctx.store.authn.subject(ctx.instanceId, userId);
  if (!user) throw userNotFound();
  return user;
}

/** May the caller change the user's links? Returns whether it did so as the user's administrator. */
async function authorizeLinkChange(ctx: Ctx, user: AuthnSubject, change: SensitiveChange): Promise<"self" | "admin" | "login"> {
  if (user.id === ctx.principal.userId) {
    await assertPresentedProof(ctx, user, change);
    return "self";
  }
  if (holds(ctx, "user.write", user.orgId)) {
    await authorizeOverRoles(ctx, user);
    return "admin";
  }
  if (hasInstancePermission(ctx, "session.write")) {
    await assertPresentedProof(ctx, user, change);
    return "login";
  }
  authorize(ctx, "user.write", user.orgId, userNotFound);
  return "admin";
}

export async function addIdpLink(ctx: Ctx, userId: string, input: LinkInput): Promise<{ at: Date; orgId: string }> {
  const user = await subject(ctx, userId);
  const as = await authorizeLinkChange(ctx, user, "bindAuthenticator");
  if (user.type !== "HUMAN") throw failedPrecondition("Errors.User.NotHuman", "only human users sign in at identity providers");
  if (!input.idpId) throw invalidArgument("Errors.IDP.Id.Missing", "idp_link.idp_id is required", { field: "idp_link.idp_id" });
  const externalUserId = input.externalUserId.trim();
  if (!externalUserId || externalUserId.length > 255) {
    throw invalidArgument("Errors.User.IDPLink.UserId.Invalid", "idp_link.user_id must have 1 to 255 characters", { field: "idp_link.user_id" });
  }
  const idp = await ctx.store.idps.find(ctx.instanceId, input.idpId);
  // A provider of another organization is not one this user signs in with.
  if (!idp || (idp.orgId !== null && idp.orgId !== user.orgId)) throw idpNotFound();
  if (as !== "admin" && !idp.isLinkingAllowed) {
    throw failedPrecondition("Errors.IDP.LinkingNotAllowed", "the identity provider's options do not allow users to link their accounts");
  }
  const externalUserName = (input.externalUserName.trim() || externalUserId).slice(0, 255);
  const at = await commit(ctx, async (tx, now) => {
    await tx.idps.link(ctx.instanceId, { idpId: idp.id, externalUserId, externalUserName, userId: user.id }, now);
    return userEvent(user, "user.idp.link.added", { idpId: idp.id, externalUserId });
  });
  return { at, orgId: user.orgId };
}

export async function listIdpLinks(ctx: Ctx, userId: string, window: Page = page(undefined)): Promise<ListTotal & { links: IdpLinkRow[] }> {
  const user = await subject(ctx, userId);
  if (user.id !== ctx.principal.userId) authorize(ctx, "user.read", user.orgId, userNotFound);
  const { rows, ...total } = await ctx.store.idps.links(ctx.instanceId, user.id, window);
  return { ...total, links: rows };
}

export async function removeIdpLink(ctx: Ctx, userId: string, idpId: string, externalUserId: string): Promise<Date> {
  const user = await subject(ctx, userId);
  await authorizeLinkChange(ctx, user, "removeAuthenticator");
  return commit(ctx, async (tx) => {
    if (!(await tx.idps.unlink(ctx.instanceId, user.id, idpId, externalUserId))) {
      throw notFound("Errors.User.IDPLink.NotFound", "the user has no such link");
    }
    return userEvent(user, "user.idp.link.removed", { idpId, externalUserId });
  });
}

/** Links a provider's user to a svc user inside the sign-in that proved both (a session check's auto-linking). */
export async function linkAtSignIn(ctx: Ctx, user: { id: string; orgId: string }, idpId: string, externalUserId: string, externalUserName: string) {
  await commit(ctx, async (tx, now) => {
    await tx.idps.link(ctx.instanceId, { idpId, externalUserId, externalUserName, userId: user.id }, now);
    return userEvent(user, "user.idp.link.added", { idpId, externalUserId, by: "auto-linking" });
  });
}
