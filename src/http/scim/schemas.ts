// Discovery (RFC 7644 §4): ServiceProviderConfig, Schemas and ResourceTypes,
// built from the attributes svc actually stores and the limits it enforces.
import { MAX_FILTER_LENGTH } from "./filter.js";
import { USER_URN } from "./resource.js";

export const SPC_URN = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig";
export const SCHEMA_URN = "urn:ietf:params:scim:schemas:core:2.0:Schema";
export const RESOURCE_TYPE_URN = "urn:ietf:params:scim:schemas:core:2.0:ResourceType";
export const LIST_URN = "urn:ietf:params:scim:api:messages:2.0:ListResponse";

export const MAX_RESULTS = 100;
export const BULK_MAX_OPERATIONS = 100;
export const BULK_MAX_PAYLOAD = 1_000_000;
export { MAX_FILTER_LENGTH };

type Attr = Record<string, unknown>;

function attr(
  name: string,
  description: string,
  o: Partial<{
    type: string;
    multiValued: boolean;
    required: boolean;
    caseExact: boolean;
    mutability: string;
    returned: string;
    uniqueness: string;
    subAttributes: Attr[];
    referenceTypes: string[];
    canonicalValues: string[];
  }> = {},
): Attr {
  return {
    name,
    type: o.type ?? "string",
    multiValued: o.multiValued ?? false,
    description,
    required: o.required ?? false,
    caseExact: o.caseExact ?? false,
    mutability: o.mutability ?? "readWrite",
    returned: o.returned ?? "default",
    uniqueness: o.uniqueness ?? "none",
    ...(o.subAttributes ? { subAttributes: o.subAttributes } : {}),
    ...(o.referenceTypes ? { referenceTypes: o.referenceTypes } : {}),
    ...(o.canonicalValues ? { canonicalValues: o.canonicalValues } : {}),
  };
}

const contactSubs = (what: string, types: string[]) => [
  attr("value", `The ${what}.`),
  attr("display", `A human-readable name for the ${what}.`),
  attr("type", `The kind of ${what}.`, { canonicalValues: types }),
  attr("primary", `Whether this is the primary ${what}; at most one entry is primary.`, { type: "boolean" }),
];

const USER_ATTRIBUTES: Attr[] = [
  attr("userName", "Unique identifier for the user, unique per instance case-insensitively.", { required: true, uniqueness: "server" }),
  attr("name", "The components of the user's name.", {
    type: "complex",
    subAttributes: [
      attr("formatted", "The full name, formatted for display."),
      attr("familyName", "The family name."),
      attr("givenName", "The given name."),
      attr("middleName", "The middle name(s)."),
      attr("honorificPrefix", "The honorific prefix(es)."),
      attr("honorificSuffix", "The honorific suffix(es)."),
    ],
  }),
  attr("displayName", "The name of the user, suitable for display."),
  attr("nickName", "The casual way to address the user."),
  attr("profileUrl", "A URI of the user's online profile (http or https).", { type: "reference", referenceTypes: ["external"] }),
  attr("title", "The user's title."),
  attr("userType", "The relationship between the organization and the user."),
  attr("preferredLanguage", "The user's preferred written or spoken language (BCP 47)."),
  attr("locale", "The user's default location for localization (BCP 47)."),
  attr("timezone", "The user's time zone (IANA time zone name)."),
  attr("active", "Whether the user may sign in.", { type: "boolean" }),
  attr("password", "The user's cleartext password; checked against the password complexity policy and never returned.", {
    mutability: "writeOnly",
    returned: "never",
  }),
  attr("emails", "Email addresses; the primary one is the user's email.", {
    type: "complex",
    multiValued: true,
    subAttributes: contactSubs("email address", ["work", "home", "other"]),
  }),
  attr("phoneNumbers", "Phone numbers; the primary one is the user's phone.", {
    type: "complex",
    multiValued: true,
    subAttributes: contactSubs("phone number", ["work", "home", "mobile", "fax", "pager", "other"]),
  }),
  attr("addresses", "Physical mailing addresses.", {
    type: "complex",
    multiValued: true,
    subAttributes: [
      attr("formatted", "The full mailing address; may contain line breaks."),
      attr("streetAddress", "The street address."),
      attr("locality", "The city or locality."),
      attr("region", "The state or region."),
      attr("postalCode", "The postal code."),
      attr("country", "The country (ISO 3166-1 alpha-2)."),
      attr("type", "The kind of address.", { canonicalValues: ["work", "home", "other"] }),
      attr("primary", "Whether this is the primary address.", { type: "boolean" }),
    ],
  }),
];

export function userSchema(base: string) {
  return {
    schemas: [SCHEMA_URN],
    id: USER_URN,
    name: "User",
    description: "User account",
    attributes: USER_ATTRIBUTES,
    meta: { resourceType: "Schema", location: `${base}/Schemas/${USER_URN}` },
  };
}

export function userResourceType(base: string) {
  return {
    schemas: [RESOURCE_TYPE_URN],
    id: "User",
    name: "User",
    endpoint: "/Users",
    description: "User account",
    schema: USER_URN,
    meta: { resourceType: "ResourceType", location: `${base}/ResourceTypes/User` },
  };
}

export function serviceProviderConfig(base: string) {
  return {
    schemas: [SPC_URN],
    documentationUri: "https://www.rfc-editor.org/rfc/rfc7644",
    patch: { supported: true },
    bulk: { supported: true, maxOperations: BULK_MAX_OPERATIONS, maxPayloadSize: BULK_MAX_PAYLOAD },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: true },
    sort: { supported: true },
    etag: { supported: false },
    authenticationSchemes: [
      {
        type: "oauthbearertoken",
        name: "OAuth Bearer Token",
        description: "An access token of svc (personal access token, client credentials or JWT profile) sent as Authorization: Bearer.",
        specUri: "https://www.rfc-editor.org/rfc/rfc6750",
        primary: true,
      },
    ],
    meta: { resourceType: "ServiceProviderConfig", location: `${base}/ServiceProviderConfig` },
  };
}

export function listResponse(resources: unknown[], total: number, startIndex: number) {
  return { schemas: [LIST_URN], totalResults: total, startIndex, itemsPerPage: resources.length, Resources: resources };
}
