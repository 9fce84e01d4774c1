// A SAML application registered by its metadata URL: the document is fetched once, at create or update (after the
// caller's permission was checked), and kept like posted metadata; svc never fetches it again by itself.
import type { AppSettings } from "../access/app-settings.js";
import type { Ctx } from "../context.js";
import { failedPrecondition, invalidArgument } from "../errors.js";
import { MAX_METADATA_BYTES } from "./sp-metadata.js";

const field = { field: "saml.metadata_url" };

export async function withFetchedMetadata(ctx: Ctx, s: AppSettings): Promise<AppSettings> {
  if (s.kind !== "saml" || !s.metadataUrl) return s;
  const url = s.metadataUrl;
  if (s.metadataXml.length > 0) throw invalidArgument("Errors.App.Saml.MetadataUrl", "give metadata_xml or metadata_url, not both", field);
  if (url.length > 2000 || !URL.canParse(url) || !["http:", "https:"].includes(new URL(url).protocol)) {
    throw invalidArgument("Errors.App.Saml.MetadataUrl", "saml.metadata_url must be an absolute http(s) URL", field);
  }
  if (!ctx.samlMetadata) throw failedPrecondition("Errors.App.Saml.MetadataUrl.Unavailable", "fetching metadata is not available here: post metadata_xml");
  return { ...s, metadataXml: await ctx.samlMetadata(url, MAX_METADATA_BYTES) };
}
