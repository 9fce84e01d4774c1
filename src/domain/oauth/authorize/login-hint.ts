// login_hint (OIDC Core §3.1.2.1): whom the client expects to sign in, read as the login name field reads what is
// typed in it (a login name username@<organization domain>, or a username only one user of the instance has), so that
// a hint selects that user's session in the browser. A hint that names nobody is ignored, never an error: the login
// name page shows it as typed, and says nothing about whether such a user exists.

import type { Ctx } from "../../context.js";
import { asDomainError } from "../../errors.js";
import { findSessionUser } from "../../sessions/session-user.js";

/** The id of the user `loginHint` names, if it names one. */
export async function hintedUser(ctx: Ctx, loginHint: string | null | undefined): Promise<string | undefined> {
  if (!loginHint?.trim()) return undefined;
  try {
    return (await findSessionUser(ctx, { loginName: loginHint })).user.id;
  } catch (err) {
    if (asDomainError(err)) return undefined;
    throw err;
  }
}

/** The user a request names: its id_token_hint's subject, else its login_hint's user. */
export const requestedUser = async (ctx: Ctx, r: { hintUserId: string | null; loginHint: string | null }): Promise<string | undefined> =>
  r.hintUserId ?? (await hintedUser(ctx, r.loginHint));
