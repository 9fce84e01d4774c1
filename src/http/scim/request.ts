// Request plumbing shared by the SCIM routes and Bulk: JSON bodies with
// their limits and content type, schema URN checks, and PATCH as a whole.
import type { IncomingMessage } from "node:http";
import type { Ctx } from "../../domain/context.js";
import { authorizeOrg, replaceScimUser, type ScimUserRecord } from "../../domain/identity/scim-users.js";
import { ILL_FORMED_MESSAGE, illFormedText } from "../../domain/well-formed.js";
import { mediaType, readBody } from "../body.js";
import { ScimError } from "./errors.js";
import { applyPatch } from "./patch.js";
import { toInput, toScimDocument } from "./resource.js";

const UTF8 = new TextDecoder("utf-8", { fatal: true });

const invalidSyntax = (detail: string, id = "Errors.Scim.Syntax") => new ScimError(400, "invalidSyntax", id, detail);

/** Reads a JSON body up to `limit` bytes: larger is 413, unparsable or not an object 400 invalidSyntax. */
export async function readJson(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  const type = mediaType(req);
  if (type && type !== "application/scim+json" && type !== "application/json") {
    throw new ScimError(415, undefined, "Errors.Scim.ContentType", "send application/scim+json (or application/json)");
  }
  const tooLarge = () => new ScimError(413, undefined, "Errors.Scim.TooLarge", `the body is larger than ${limit} bytes`);
  const body = await readBody(req, { maxBytes: limit, tooLarge, drainRefused: true });
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    // RFC 8259 §8.1: JSON text is UTF-8; replacing bad bytes with U+FFFD would store what the client never sent.
    throw invalidSyntax("the body is not valid UTF-8", "Errors.Scim.Encoding");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidSyntax("the body is not valid JSON", "Errors.Scim.Json");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw invalidSyntax("the body is not a JSON object", "Errors.Scim.Json");
  const illFormed = illFormedText(parsed);
  if (illFormed !== undefined) throw new ScimError(400, "invalidValue", "Errors.Scim.Unicode", `${illFormed} ${ILL_FORMED_MESSAGE}`);
  return parsed as Record<string, unknown>;
}

export function requireSchema(body: Record<string, unknown>, urn: string): void {
  const schemas = body.schemas;
  if (!Array.isArray(schemas) || !schemas.some((s) => typeof s === "string" && s.toLowerCase() === urn.toLowerCase())) {
    throw invalidSyntax(`schemas must contain ${urn}`, "Errors.Scim.Schemas");
  }
}

/**
 * PATCH: the operations applied to the current resource, stored as a whole.
 * The domain applies them again under the user's row lock, so concurrent
 * PATCHes of one user serialize instead of overwriting each other.
 */
export async function patchUser(ctx: Ctx, orgId: string, id: string, operations: unknown): Promise<ScimUserRecord> {
  authorizeOrg(ctx, "user.write", orgId);
  authorizeOrg(ctx, "user.read", orgId);
  return replaceScimUser(ctx, orgId, id, (current) => toInput(applyPatch(toScimDocument(current), operations)));
}
