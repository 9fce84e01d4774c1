// Which browser origins may call svc across origins (CORS). The API and SCIM: the security settings' allowed origins,
// of the instance and of every organization (a preflight carries no credentials, so it cannot say whose it is; what a
// call may do is still decided by its token). The OAuth endpoints a browser application calls itself (token,
// revocation, userinfo, introspection): those origins and the origins of the OIDC applications' redirect URIs.
import type { Ctx } from "../context.js";
import { parseStored } from "./values.js";

export interface CorsOrigins {
  api: ReadonlySet<string>;
  oauth: ReadonlySet<string>;
}

/** The origin (scheme://host[:port], lower-case, default port left out) of a URL; undefined for anything else. */
export function originOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    if (u.protocol !== "https:" && u.protocol !== "http:") return undefined;
    return u.origin.toLowerCase();
  } catch {
    return undefined;
  }
}

export async function corsOrigins(ctx: Pick<Ctx, "store" | "instanceId">): Promise<CorsOrigins> {
  const [settings, redirectUris] = await Promise.all([
    ctx.store.settings.allOfKind(ctx.instanceId, "security"),
    ctx.store.apps.oidcRedirectUris(ctx.instanceId),
  ]);
  const api = new Set<string>();
  for (const row of settings) {
    for (const o of parseStored("security", row.value).allowedCorsOrigins) {
      const origin = originOf(o);
      if (origin) api.add(origin);
    }
  }
  const oauth = new Set(api);
  for (const uri of redirectUris) {
    const origin = originOf(uri);
    if (origin) oauth.add(origin);
  }
  return { api, oauth };
}
