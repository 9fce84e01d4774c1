// IdentityProviderService: generic OpenID Connect providers of the instance (idp.write instance-wide) or of one
// organization (idp.write there). Everyone who reads providers anywhere reads the instance's (a login page shows them
// as buttons); an organization's own are read with idp.read there. The client secret is sealed with the master key,
// bound to the instance and the provider, and never leaves svc.
import { idpSecretAad } from "../../crypto/sealer.js";
import type { IdpRow } from "../../store/idps.js";
import { authorize, readableOrgs } from "../access/permissions.js";
import { commit } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument, notFound, permissionDenied } from "../errors.js";
import { authnSettings } from "../identity/authn/access.js";
import { newId } from "../ids.js";
import { type ListTotal, type Page, page } from "../list.js";
import { existingOrg } from "../orgs/orgs.js";
import { type ClaimMapping, claimMapping, SAML_ATTRIBUTES, STANDARD_CLAIMS, storedMapping } from "./claims.js";
import type { OidcProvider } from "./ports.js";
import { type SamlSettings, spUrls, storedSamlConfig } from "./saml-config.js";

export type AutoLinking = "unspecified" | "username" | "email";

export interface IdpOptions {
  isLinkingAllowed: boolean;
  isCreationAllowed: boolean;
  isAutoCreation: boolean;
  isAutoUpdate: boolean;
  autoLinking: AutoLinking;
}

export interface OidcProviderInput {
  name: string;
  issuer: string;
  clientId: string;
  /** Required on add; empty on update keeps the stored one. */
  clientSecret: string;
  scopes: string[];
  isIdTokenMapping: boolean;
  options: IdpOptions;
  claimMapping?: Partial<ClaimMapping>;
}

export interface SamlView extends SamlSettings {
  metadataXml: Uint8Array;
  entityId: string;
  spMetadataUrl: string;
  acsUrl: string;
}

export interface IdpView {
  id: string;
  orgId: string | null;
  type: "oidc" | "saml";
  name: string;
  issuer: string;
  clientId: string;
  scopes: string[];
  isIdTokenMapping: boolean;
  options: IdpOptions;
  claimMapping: ClaimMapping;
  /** SAML providers only. */
  saml?: SamlView;
  createdAt: Date;
  updatedAt: Date;
}

export const DEFAULT_SCOPES = ["openid", "profile", "email"];
const AUTO_LINKING = new Set<string>(["unspecified", "username", "email"]);

export const idpNotFound = () => notFound("Errors.IDP.NotFound", "identity provider not found");

function samlView(r: IdpRow, externalUrl: string): SamlView {
  const c = storedSamlConfig(r.saml);
  const sp = spUrls(externalUrl, r.id);
  return {
    binding: c.binding,
    withSignedRequest: c.withSignedRequest,
    nameIdFormat: c.nameIdFormat,
    transientMappingAttributeName: c.transientMappingAttributeName,
    metadataXml: r.samlMetadata ?? new Uint8Array(),
    entityId: c.entityId,
    spMetadataUrl: sp.entityId,
    acsUrl: sp.acsUrl,
  };
}

/** A provider as the API shows it; `externalUrl` builds svc's own URLs as a SAML provider's service provider. */
export function idpView(r: IdpRow, externalUrl = ""): IdpView {
  const saml = r.type === "saml";
  return {
    id: r.id,
    orgId: r.orgId,
    type: saml ? "saml" : "oidc",
    name: r.name,
    issuer: r.issuer,
    clientId: r.clientId,
    scopes: r.scopes,
    isIdTokenMapping: r.isIdTokenMapping,
    options: {
      isLinkingAllowed: r.isLinkingAllowed,
      isCreationAllowed: r.isCreationAllowed,
      isAutoCreation: r.isAutoCreation,
      isAutoUpdate: r.isAutoUpdate,
      autoLinking: (AUTO_LINKING.has(r.autoLinking) ? r.autoLinking : "unspecified") as AutoLinking,
    },
    claimMapping: storedMapping(r.claimMapping, saml ? SAML_ATTRIBUTES : STANDARD_CLAIMS),
    ...(saml ? { saml: samlView(r, externalUrl) } : {}),
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}

/** Loopback hosts, where plain http is allowed (a provider on the same machine, tests). */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "");
  return h === "localhost" || h.endsWith(".localhost") || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

function validIssuer(issuer: string): string {
  const field = { field: "issuer" };
  let url: URL;
  try {
    url = new URL(issuer.trim());
  } catch {
    throw invalidArgument("Errors.IDP.Issuer.Invalid", "issuer must be an absolute URL", field);
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopback(url.hostname))) {
    throw invalidArgument("Errors.IDP.Issuer.Insecure", "issuer must use https (http only on a loopback host)", field);
  }
  if (url.search || url.hash || url.username || url.password || issuer.length > 500) {
    throw invalidArgument("Errors.IDP.Issuer.Invalid", "issuer must be a URL without query, fragment or credentials", field);
  }
  return issuer.trim().replace(/\/+$/, "");
}

function validScopes(scopes: string[]): string[] {
  const out = scopes.map((s) => s.trim()).filter(Boolean);
  if (!out.length) return DEFAULT_SCOPES;
  if (out.length > 50 || out.some((s) => s.length > 200 || /\s/.test(s))) {
    throw invalidArgument("Errors.IDP.Scopes.Invalid", "scopes are at most 50 names without spaces", { field: "scopes" });
  }
  if (!out.includes("openid")) out.unshift("openid");
  return [...new Set(out)];
}

export function validOptions(o: IdpOptions): IdpOptions {
  if (!AUTO_LINKING.has(o.autoLinking)) throw invalidArgument("Errors.IDP.Options.Invalid", "unknown auto_linking", { field: "options.auto_linking" });
  return o;
}

export function required(value: string, field: string, id: string, max: number): string {
  const v = value.trim();
  if (!v) throw invalidArgument(`Errors.IDP.${id}.Missing`, `${field} is required`, { field });
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what we reject
  if (v.length > max || /[\u0000-\u001f\u007f]/.test(v)) {
    throw invalidArgument(`Errors.IDP.${id}.Invalid`, `${field} must be at most ${max} characters without control characters`, { field });
  }
  return v;
}

/** The columns of a provider from its input, the secret sealed (when given). */
function columns(ctx: Ctx, id: string, input: OidcProviderInput, secretRequired: boolean) {
  const clientId = required(input.clientId, "client_id", "ClientId", 500);
  if (secretRequired && !input.clientSecret) {
    throw invalidArgument("Errors.IDP.ClientSecret.Missing", "client_secret is required", { field: "client_secret" });
  }
  if (input.clientSecret.length > 2000) throw invalidArgument("Errors.IDP.ClientSecret.TooLong", "client_secret is too long", { field: "client_secret" });
  const o = validOptions(input.options);
  return {
    name: required(input.name, "name", "Name", 200),
    issuer: validIssuer(input.issuer),
    clientId,
    scopes: validScopes(input.scopes),
    isIdTokenMapping: input.isIdTokenMapping,
    ...o,
    claimMapping: claimMapping(input.claimMapping),
    ...(input.clientSecret
      ? { clientSecretEnc: authnSettings(ctx).sealer.seal(Buffer.from(input.clientSecret, "utf8"), idpSecretAad(ctx.instanceId, id)) }
      : {}),
  };
}

export const idpEvent = (id: string, orgId: string | null, type: string, payload: Record<string, unknown> = {}) => ({
  aggregateType: "idp",
  aggregateId: id,
  orgId,
  type,
  payload,
});

export async function addOidcProvider(ctx: Ctx, orgId: string | null, input: OidcProviderInput): Promise<{ id: string; at: Date; ownerId: string }> {
  if (orgId) {
    authorize(ctx, "idp.write", orgId, () => notFound("Errors.Org.NotFound", "organization not found"));
    await existingOrg(ctx, orgId);
  } else authorize(ctx, "idp.write", null);
  const id = newId();
  const c = columns(ctx, id, input, true);
  const at = await commit(ctx, async (tx, now) => {
    await tx.idps.insert({
      id,
      instanceId: ctx.instanceId,
      orgId,
      type: "oidc",
      ...c,
      clientSecretEnc: c.clientSecretEnc as Uint8Array,
      samlMetadata: null,
      saml: null,
      createdAt: now,
      updatedAt: now,
    });
    return idpEvent(id, orgId, "idp.oidc.added", { name: c.name, issuer: c.issuer });
  });
  return { id, at, ownerId: orgId ?? ctx.instanceId };
}

/** The provider, for a caller holding `permission` where it lives (else it does not exist to the caller). */
export async function providerFor(ctx: Ctx, id: string, permission: "idp.read" | "idp.write"): Promise<IdpRow> {
  if (!id) throw invalidArgument("Errors.IDP.Id.Missing", "idp_id is required", { field: "idp_id" });
  const row = await ctx.store.idps.find(ctx.instanceId, id);
  if (!row) throw idpNotFound();
  if (row.orgId) authorize(ctx, permission, row.orgId, idpNotFound);
  else if (permission === "idp.write") authorize(ctx, "idp.write", null);
  else {
    const orgs = readableOrgs(ctx, "idp.read");
    if (orgs !== "all" && orgs.length === 0) throw permissionDenied("Errors.Permission.Denied", "missing permission idp.read");
  }
  return row;
}

export async function updateOidcProvider(ctx: Ctx, id: string, input: OidcProviderInput): Promise<{ at: Date; ownerId: string }> {
  const row = await providerFor(ctx, id, "idp.write");
  if (row.type !== "oidc") throw failedPrecondition("Errors.IDP.TypeMismatch", "the identity provider is not an OpenID Connect provider");
  const c = columns(ctx, id, input, false);
  const at = await commit(ctx, async (tx, now) => {
    if (!(await tx.idps.update(ctx.instanceId, id, { ...c, updatedAt: now }))) throw idpNotFound();
    return idpEvent(id, row.orgId, "idp.oidc.changed", { name: c.name, issuer: c.issuer, secretChanged: Boolean(c.clientSecretEnc) });
  });
  return { at, ownerId: row.orgId ?? ctx.instanceId };
}

export async function getIdentityProvider(ctx: Ctx, id: string): Promise<IdpView> {
  return idpView(await providerFor(ctx, id, "idp.read"), ctx.authn?.externalUrl);
}

/** The instance's providers and, with `orgId`, that organization's own. */
export async function listIdentityProviders(ctx: Ctx, orgId: string, window: Page | undefined = page(undefined)): Promise<ListTotal & { idps: IdpView[] }> {
  if (orgId) authorize(ctx, "idp.read", orgId, () => notFound("Errors.Org.NotFound", "organization not found"));
  const { rows, ...total } = await ctx.store.idps.page(ctx.instanceId, orgId ? [orgId] : [], window);
  return { ...total, idps: rows.map((r) => idpView(r, ctx.authn?.externalUrl)) };
}

export async function deleteIdentityProvider(ctx: Ctx, id: string): Promise<Date> {
  const row = await providerFor(ctx, id, "idp.write");
  return commit(ctx, async (tx) => {
    if (!(await tx.idps.delete(ctx.instanceId, id))) throw idpNotFound();
    return idpEvent(id, row.orgId, "idp.removed");
  });
}

/** A stored provider as the relying party uses it, its secret opened. */
export function relyingPartyView(ctx: Pick<Ctx, "instanceId" | "authn">, row: IdpRow): OidcProvider {
  const secret = authnSettings(ctx as Ctx).sealer.open(row.clientSecretEnc, idpSecretAad(ctx.instanceId, row.id));
  return {
    id: row.id,
    issuer: row.issuer,
    clientId: row.clientId,
    clientSecret: secret.toString("utf8"),
    scopes: row.scopes,
    idTokenOnly: row.isIdTokenMapping,
  };
}
