// Fetching a SAML SP's metadata by URL, once, when an application is registered with metadataUrl: http(s) only, no
// redirects followed, 5 seconds, and the body cut off past the limit while it streams (never buffered whole).
import { invalidArgument } from "../domain/errors.js";
import type { SamlMetadataFetcher } from "../domain/saml/ports.js";

const TIMEOUT_MS = 5_000;

const refused = (message: string) => invalidArgument("Errors.App.Saml.MetadataUrl", `saml.metadata_url: ${message}`, { field: "saml.metadata_url" });

export function httpMetadataFetcher(): SamlMetadataFetcher {
  return async (url, maxBytes) => {
    let res: Response;
    try {
      res = await fetch(url, {
        redirect: "error",
        signal: AbortSignal.timeout(TIMEOUT_MS),
        headers: { accept: "application/samlmetadata+xml, application/xml" },
      });
    } catch {
      throw refused("could not be fetched (unreachable, a redirect, or over 5 seconds)");
    }
    if (res.status !== 200 || !res.body) throw refused(`answered ${res.status}`);
    const chunks: Uint8Array[] = [];
    let size = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        size += chunk.length;
        if (size > maxBytes) throw refused(`is larger than ${maxBytes} bytes`);
        chunks.push(chunk);
      }
    } catch (err) {
      await res.body.cancel().catch(() => {});
      if (err instanceof Error && "kind" in err) throw err;
      throw refused("could not be read (over 5 seconds or the connection failed)");
    }
    return Buffer.concat(chunks);
  };
}
