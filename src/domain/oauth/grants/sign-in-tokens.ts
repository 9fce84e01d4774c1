// The tokens of a finished sign-in, for the two grants that redeem one: an authorization code and a device code. Each
// reads its auth request with the user, the session and the app's project gates in one statement and checks what is
// its own (the code's client, redirect URI and PKCE; the device's polling); what follows is the same for both: the
// user still usable, the session still live, the scopes granted as of now, offline_access with a refresh token, and
// the redemption written in the statement that writes the tokens.
import type { LinkSessionRow } from "../../../store/sign-in-sql.js";
import { liveOf } from "../../sessions/link.js";
import { usable } from "../client-auth.js";
import { invalidGrant } from "../errors.js";
import type { TokenResponse } from "../issue.js";
import type { UserInfoSource } from "../resolve.js";
import type { OAuthRuntime } from "../runtime.js";
import { grantScopes, type ScopeFacts } from "../scopes.js";
import type { OidcClient } from "./oidc-client.js";
import { issueForUser, OFFLINE_ACCESS, withOffline } from "./user-tokens.js";

/** The auth request of a finished sign-in: who signed in, when and how, and what the application asked for. */
export interface FinishedSignIn {
  id: string;
  scopes: string[];
  sessionId: string | null;
  authTime: Date;
  amr: string[];
  nonce?: string | null;
}

/** What the grant's one read found beside the request: the user (with its organization's state) and the session. */
export type SignInRead = ScopeFacts & {
  user: (UserInfoSource & { instanceId: string; state: string; org: { state: string } }) | null | undefined;
  session: LinkSessionRow | null;
};

export async function issueForSignIn(
  rt: OAuthRuntime,
  client: OidcClient,
  r: FinishedSignIn,
  read: SignInRead,
  now: Date,
  what: "authorization_code" | "device_code",
): Promise<TokenResponse> {
  const user = read.user;
  if (!user || user.instanceId !== rt.instanceId || !usable(user)) throw invalidGrant("the user is not active");
  if (r.sessionId && !liveOf(read.session, now)) throw invalidGrant("the session has ended");
  const granted = withOffline(
    await grantScopes(rt, r.scopes.filter((s) => s !== OFFLINE_ACCESS).join(" "), user, client.clientId, client.projectId, read),
    r.scopes,
    client,
  );
  const offline = granted.scopes.includes(OFFLINE_ACCESS);
  return issueForUser(
    rt,
    {
      client,
      user,
      granted,
      familyId: r.id,
      sessionId: r.sessionId,
      authTime: r.authTime,
      amr: r.amr,
      nonce: r.nonce ?? undefined,
      refresh: offline ? { scopes: granted.scopes, audience: granted.audience, expiresAt: new Date(now.getTime() + rt.lifetimes.refresh * 1000) } : undefined,
      now,
    },
    { code: r.id },
    what,
  );
}
