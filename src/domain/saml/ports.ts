// What SAML application registration needs from outside the domain: fetching an SP's metadata by URL (filled by the
// composition root, src/saml/metadata-fetch.ts).

/** The document at `url` (at most `maxBytes`); throws an InvalidArgument DomainError when it cannot be had. */
export type SamlMetadataFetcher = (url: string, maxBytes: number) => Promise<Uint8Array>;
