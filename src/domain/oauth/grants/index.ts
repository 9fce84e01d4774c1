// The grant types the token endpoint serves, by grant_type.
import { unsupportedGrantType } from "../errors.js";
import { authorizationCode } from "./authorization-code.js";
import { clientCredentials } from "./client-credentials.js";
import { deviceCode } from "./device-code.js";
import { jwtBearer } from "./jwt-bearer.js";
import { refreshToken } from "./refresh-token.js";
import { tokenExchange } from "./token-exchange.js";
import type { Grant } from "./types.js";

export type { Grant } from "./types.js";

const GRANTS: ReadonlyMap<string, Grant> = new Map(
  [authorizationCode, refreshToken, clientCredentials, jwtBearer, tokenExchange, deviceCode].map((g) => [g.type, g]),
);

/** The grant_type values of discovery's grant_types_supported. */
export const GRANT_TYPES = [...GRANTS.keys()];

/** The grant for a grant_type; unsupported_grant_type otherwise. */
export function grantFor(type: string): Grant {
  const grant = GRANTS.get(type);
  if (!grant) throw unsupportedGrantType(`supported: ${[...GRANTS.keys()].join(", ")}`);
  return grant;
}
