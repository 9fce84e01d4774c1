// A session's checks.idp_intent: a succeeded intent is a first factor and names the user. The user is the one linked to
// the provider's user; failing that, per the provider's options, the one user with the provider's verified e-mail
// (auto-linking EMAIL, among the provider's organization's users, or the instance's for an instance-wide provider),
// or a user created from the provider's profile (just-in-time, in the provider's organization or the instance's
// default one). Otherwise FailedPrecondition Errors.IdpIntent.UserNotLinked: the login offers to register or to link.
// Auto-linking by username never signs in by itself: a provider's user may pick any name, so the login must have the
// user prove the svc account first. The check spends the intent (one use) and, with the provider's is_auto_update,
// brings the user's names and e-mail up to date.
import type { IdpRow, IntentRow } from "../../store/idps.js";
import type { SignInUser } from "../../store/sign-in-sql.js";
import type { Ctx } from "../context.js";
import { DomainError, failedPrecondition, invalidArgument } from "../errors.js";
import { insertUser, prepareUser } from "../identity/user-create.js";
import { newId } from "../ids.js";
import type { FactorCheck } from "../sessions/factors.js";
import { updateFromProvider } from "./auto-update.js";
import { type ExternalProfile, storedProfile } from "./claims.js";
import { assertExternalLoginAllowed, intentNotFound, newUserProfile, provenIntent, providerOrg } from "./intents.js";
import { linkAtSignIn } from "./links.js";

export interface IntentCheck {
  idpIntentId: string;
  idpIntentToken: string;
}

const FIELD = "checks.idp_intent.idp_intent_id";
const used = () => failedPrecondition("Errors.IdpIntent.Used", "the intent was used for a sign-in already");
const notAllowed = () =>
  failedPrecondition("Errors.IdpIntent.ExternalLoginNotAllowed", "the login settings do not allow signing in with an external identity provider");

/** The user a CreateSession with an intent and no user check signs in (linking or creating it when the options say so). */
export async function intentSessionUser(ctx: Ctx, check: IntentCheck): Promise<SignInUser> {
  const intent = await provenIntent(ctx, check.idpIntentId, check.idpIntentToken, FIELD);
  if (intent.consumedAt) throw used();
  const idp = await ctx.store.idps.find(ctx.instanceId, intent.idpId);
  if (!idp) throw intentNotFound();
  await assertExternalLoginAllowed(ctx, await providerOrg(ctx, idp.orgId));
  const userId = await intentUserId(ctx, idp, intent);
  const found = await ctx.store.sessions.userById(ctx.instanceId, userId);
  if (!found) throw failedPrecondition("Errors.IdpIntent.UserNotLinked", "the provider's user is linked to no svc user");
  return found;
}

async function intentUserId(ctx: Ctx, idp: IdpRow, intent: IntentRow): Promise<string> {
  const sub = intent.externalUserId as string;
  const linked = await ctx.store.idps.linkedUser(ctx.instanceId, idp.id, sub);
  if (linked) return linked;
  const profile = storedProfile(intent.profile);
  const name = intent.externalUserName ?? sub;
  if (idp.autoLinking === "email" && profile.email && profile.emailVerified) {
    const ids = await ctx.store.idps.usersWithVerifiedEmail(ctx.instanceId, idp.orgId, profile.email, 2);
    if (ids.length === 1) {
      const user = await ctx.store.authn.subject(ctx.instanceId, ids[0]);
      if (user) {
        await linkAtSignIn(ctx, user, idp.id, sub, name);
        return user.id;
      }
    }
  }
  if (idp.isAutoCreation && idp.isCreationAllowed) return createUser(ctx, idp, sub, name, profile);
  throw failedPrecondition("Errors.IdpIntent.UserNotLinked", "the provider's user is linked to no svc user: register or link an account");
}

/** A human user from the provider's profile, linked to it, in one transaction; a taken username gets a suffix. */
async function createUser(ctx: Ctx, idp: IdpRow, sub: string, externalName: string, profile: ExternalProfile): Promise<string> {
  const orgId = await providerOrg(ctx, idp.orgId);
  if (!orgId) throw failedPrecondition("Errors.Instance.NoDefaultOrg", "the instance has no default organization to create the user in");
  if (!profile.email) throw failedPrecondition("Errors.IdpIntent.EmailMissing", "the provider gave no e-mail address to create a user with");
  const p = newUserProfile(profile, sub);
  for (const username of [p.username, `${p.username}-${newId().slice(-6)}`]) {
    const prepared = await prepareUser(
      ctx,
      {
        orgId,
        username,
        human: { givenName: p.givenName, familyName: p.familyName, displayName: p.displayName, email: p.email, emailVerified: p.emailVerified },
      },
      orgId,
    );
    // Signs in at the provider: no password to set first.
    prepared.data.state = "ACTIVE";
    try {
      await ctx.store.transaction(async (tx) => {
        await insertUser(ctx, tx, prepared);
        await linkAtSignIn({ ...ctx, store: tx }, { id: prepared.data.id, orgId }, idp.id, sub, externalName);
      });
      return prepared.data.id;
    } catch (err) {
      if (!(err instanceof DomainError) || err.kind !== "AlreadyExists" || !/username/i.test(`${err.id} ${err.message}`)) throw err;
    }
  }
  throw failedPrecondition("Errors.IdpIntent.UsernameTaken", "no free username for the provider's user");
}

/** The check itself: the intent's provider user is linked to the session's user; the intent is spent. */
export const idpIntentCheck: FactorCheck<"idpIntent"> = async (step, input) => {
  if (!step.login.allowExternalIdp) throw notAllowed();
  const intent = await provenIntent(step.ctx, input.idpIntentId, input.idpIntentToken, FIELD);
  if (intent.consumedAt) throw used();
  const linked = await step.ctx.store.idps.linkedUser(step.ctx.instanceId, intent.idpId, intent.externalUserId as string);
  if (linked !== step.user.id) {
    throw invalidArgument("Errors.IdpIntent.OtherUser", "the provider's user of the intent is not linked to the session's user", { field: FIELD });
  }
  if (!(await step.ctx.store.idps.consumeIntent(intent.id, step.now))) throw used();
  step.patch.intentCheckedAt = step.now;
  const idp = await step.ctx.store.idps.find(step.ctx.instanceId, intent.idpId);
  if (idp?.isAutoUpdate) await updateFromProvider(step.ctx, step.user, storedProfile(intent.profile));
};
