// svc as the service provider of a SAML identity provider: its metadata for that provider (entity id = the metadata
// URL, the ACS with HTTP-POST, svc's SAML signing certificates — all of them during a rotation's overlap) and the
// AuthnRequest that starts a sign-in (Core §3.4.1), sent with the HTTP-Redirect binding (deflated, base64, RelayState,
// and SigAlg/Signature over the query when signing, Bindings §3.4.4.1) or the HTTP-POST binding (an enveloped
// signature). The RelayState is the intent's state: the Response comes back to the ACS with it.
import { randomBytes } from "node:crypto";
import { deflateRawSync } from "node:zlib";
import type { Element } from "@xmldom/xmldom";
import type { IdpRow } from "../../store/idps.js";
import type { Ctx } from "../context.js";
import { failedPrecondition } from "../errors.js";
import { authnSettings } from "../identity/authn/access.js";
import { el, open, type Signable, signEnveloped, textEl, xmlns } from "../saml/canonical.js";
import type { IdpCertificates } from "../saml/runtime.js";
import { RSA_SHA256, signQueryAsync } from "../saml/signatures.js";
import { add, BINDINGS, NS, newDocument, serialize } from "../saml/xml.js";
import { idpNotFound } from "./providers.js";
import { NAME_ID_FORMAT_URNS, type SamlProviderConfig, spUrls, ssoEndpoint, storedSamlConfig } from "./saml-config.js";

/** Where the browser goes with the AuthnRequest: a URL (HTTP-Redirect), or a form to post (HTTP-POST). */
export type BrowserNext = { authUrl: string } | { post: { url: string; fields: { SAMLRequest: string; RelayState: string } } };

function certificates(ctx: Pick<Ctx, "idp">): IdpCertificates {
  const certs = ctx.idp?.samlCertificates;
  if (!certs) throw failedPrecondition("Errors.IDP.Saml.Unavailable", "svc's SAML certificates are not available here");
  return certs;
}

/** svc's SP metadata for the provider (SAML 2.0 Metadata §2.4.4), valid against saml-schema-metadata-2.0.xsd. */
export async function spMetadata(ctx: Pick<Ctx, "idp" | "authn">, idp: IdpRow): Promise<string> {
  const c = storedSamlConfig(idp.saml);
  const sp = spUrls(authnSettings(ctx as Ctx).externalUrl, idp.id);
  const doc = newDocument(NS.metadata, "md:EntityDescriptor");
  const root = doc.documentElement as Element;
  root.setAttribute("xmlns:ds", NS.dsig);
  root.setAttribute("entityID", sp.entityId);
  const descriptor = add(root, NS.metadata, "md:SPSSODescriptor", {
    AuthnRequestsSigned: String(c.withSignedRequest),
    WantAssertionsSigned: "true",
    protocolSupportEnumeration: NS.protocol,
  });
  for (const cert of await certificates(ctx).listed()) {
    const kd = add(descriptor, NS.metadata, "md:KeyDescriptor", { use: "signing" });
    add(add(add(kd, NS.dsig, "ds:KeyInfo"), NS.dsig, "ds:X509Data"), NS.dsig, "ds:X509Certificate", {}, cert.base64);
  }
  add(descriptor, NS.metadata, "md:NameIDFormat", {}, NAME_ID_FORMAT_URNS[c.nameIdFormat]);
  add(descriptor, NS.metadata, "md:AssertionConsumerService", { Binding: BINDINGS.post, Location: sp.acsUrl, index: "0", isDefault: "true" });
  return `<?xml version="1.0" encoding="UTF-8"?>\n${serialize(doc)}`;
}

/** svc's SP metadata for the SAML provider `idpId` (NotFound for any other id). */
export async function spMetadataOf(ctx: Pick<Ctx, "store" | "instanceId" | "idp" | "authn">, idpId: string): Promise<string> {
  const idp = await ctx.store.idps.find(ctx.instanceId, idpId);
  if (idp?.type !== "saml") throw idpNotFound();
  return spMetadata(ctx, idp);
}

/**
 * The AuthnRequest, written in exclusive canonical form (canonical.ts) and split where an enveloped signature goes
 * (after its Issuer): signed, it digests the text as sent; unsigned, head and tail together are the request.
 */
function authnRequestParts(c: SamlProviderConfig, sp: { entityId: string; acsUrl: string }, id: string, destination: string, now: Date): Signable {
  const attrs = {
    ID: id,
    Version: "2.0",
    IssueInstant: now.toISOString(),
    Destination: destination,
    AssertionConsumerServiceURL: sp.acsUrl,
    ProtocolBinding: BINDINGS.post,
  };
  return {
    id,
    head: open("samlp:AuthnRequest", attrs, xmlns("samlp", NS.protocol)) + textEl("saml:Issuer", {}, sp.entityId, xmlns("saml", NS.assertion)),
    tail: `${el("samlp:NameIDPolicy", { Format: NAME_ID_FORMAT_URNS[c.nameIdFormat], AllowCreate: "true" }, "")}</samlp:AuthnRequest>`,
  };
}

/** The AuthnRequest for a new intent: its ID (the Response's InResponseTo) and where the browser goes with it. */
export async function samlAuthnRequest(ctx: Ctx, idp: IdpRow, relayState: string): Promise<{ requestId: string; next: BrowserNext }> {
  const c = storedSamlConfig(idp.saml);
  const sp = spUrls(authnSettings(ctx).externalUrl, idp.id);
  const sso = ssoEndpoint(c);
  const requestId = `_${randomBytes(20).toString("hex")}`;
  const parts = authnRequestParts(c, sp, requestId, sso.url, ctx.clock());
  const xml = parts.head + parts.tail;
  const cert = c.withSignedRequest ? await certificates(ctx).active() : undefined;
  if (sso.binding === "post") {
    // Signed inside (enveloped, RSA-SHA256 in libuv's thread pool), as the HTTP-POST binding carries it.
    const signed = cert ? await signEnveloped(parts, cert.privateKey, cert.base64) : xml;
    return { requestId, next: { post: { url: sso.url, fields: { SAMLRequest: Buffer.from(signed).toString("base64"), RelayState: relayState } } } };
  }
  let query = `SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString("base64"))}&RelayState=${encodeURIComponent(relayState)}`;
  if (cert) {
    query += `&SigAlg=${encodeURIComponent(RSA_SHA256)}`;
    query += `&Signature=${encodeURIComponent(await signQueryAsync(query, cert.privateKey))}`;
  }
  return { requestId, next: { authUrl: `${sso.url}${sso.url.includes("?") ? "&" : "?"}${query}` } };
}
