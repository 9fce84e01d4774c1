// What a target is told about the user a function runs for: the profile, the metadata (values base64, as in the
// metadata claim) and the roles the user holds per project.
import type { Store } from "../../store/index.js";
import { roleClaims } from "../access/role-claims.js";
import type { UserInfoSource } from "../oauth/resolve.js";

export async function userContext(store: Store, instanceId: string, user: UserInfoSource): Promise<Record<string, unknown>> {
  const [metadata, grants] = await Promise.all([store.tokens.metadataOf(user.id), roleClaims(store, instanceId, user.id)]);
  return {
    user: {
      id: user.id,
      organizationId: user.orgId,
      username: user.username,
      givenName: user.givenName,
      familyName: user.familyName,
      nickName: user.nickName,
      displayName: user.displayName,
      preferredLanguage: user.preferredLanguage,
      email: user.email,
      emailVerified: user.emailVerified,
      phone: user.phone,
      phoneVerified: user.phoneVerified,
    },
    userMetadata: metadata.map((m) => ({ key: m.key, value: Buffer.from(m.value).toString("base64") })),
    userGrants: [...grants].map(([projectId, claim]) => ({
      projectId,
      roles: Object.entries(claim).map(([key, orgs]) => ({ key, organizationIds: Object.keys(orgs) })),
    })),
  };
}
