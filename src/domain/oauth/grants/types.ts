import type { ClientRecord } from "../client-auth.js";
import type { TokenResponse } from "../issue.js";
import type { OAuthRuntime } from "../runtime.js";

/** A grant type (RFC 6749 §4): its parameters, whether the client must authenticate, and its handler. */
export interface Grant {
  readonly type: string;
  /** The token request parameters the grant reads (besides grant_type and client authentication). */
  readonly parameters: readonly string[];
  /** "required": the client authenticates first; "optional": credentials sent must be valid (RFC 6749 §3.2.1). */
  readonly clientAuthentication: "required" | "optional";
  handle(rt: OAuthRuntime, params: Record<string, string | undefined>, client: ClientRecord | undefined, now: Date): Promise<TokenResponse>;
}
