// REST calls derived from the protos: each RPC's google.api.http rule gives
// the HTTP method, the path template (parsed by the production transcoder's
// parser) and which fields travel in the body, so no test keeps its own
// RPC → REST table that could drift from the annotations.

import { type DescField, type DescMessage, type DescMethod, type DescService, getOption, isMessage, type Message, toJson } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { ActionService } from "../../gen/svc/action/v2/action_service_pb.js";
import { ApplicationService } from "../../gen/svc/app/v2/app_service_pb.js";
import { AuthorizationService } from "../../gen/svc/authorization/v2/authorization_service_pb.js";
import { EventService } from "../../gen/svc/event/v2/event_service_pb.js";
import { IdentityProviderService } from "../../gen/svc/idp/v2/idp_service_pb.js";
import { InstanceService } from "../../gen/svc/instance/v2/instance_service_pb.js";
import { OIDCService } from "../../gen/svc/oidc/v2/oidc_service_pb.js";
import { OrganizationService } from "../../gen/svc/org/v2/org_service_pb.js";
import { ProjectService } from "../../gen/svc/project/v2/project_service_pb.js";
import { SAMLService } from "../../gen/svc/saml/v2/saml_service_pb.js";
import { SessionService } from "../../gen/svc/session/v2/session_service_pb.js";
import { MailTextService } from "../../gen/svc/settings/v2/mail_text_service_pb.js";
import { SettingsService } from "../../gen/svc/settings/v2/settings_service_pb.js";
import { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { parsePathTemplate } from "../../src/http/transcoder.js";

// biome-ignore lint/suspicious/noExplicitAny: request and reply JSON is checked field by field
export type Json = any;
export type JsonObject = Record<string, Json>;

/** Every service the resource API serves over REST. */
export const SERVICES = [
  UserService,
  OrganizationService,
  InstanceService,
  ProjectService,
  AuthorizationService,
  ApplicationService,
  SettingsService,
  MailTextService,
  EventService,
  OIDCService,
  SAMLService,
  SessionService,
  IdentityProviderService,
  ActionService,
] as const;

type MethodsOf<S> = S extends { method: infer M } ? keyof M & string : never;
/** An RPC by its proto name ("CreateOrganization"); the names are unique across the services. */
export type Rpc = Capitalize<MethodsOf<(typeof SERVICES)[number]>>;

const BY_NAME = new Map<string, DescMethod>();
for (const service of SERVICES as readonly DescService[]) {
  for (const method of service.methods) {
    if (BY_NAME.has(method.name)) throw new Error(`RPC name ${method.name} is not unique across the services`);
    BY_NAME.set(method.name, method);
  }
}

/** The method descriptor of an RPC named by its proto name. */
export function rpcMethod(rpc: Rpc): DescMethod {
  const method = BY_NAME.get(rpc);
  if (!method) throw new Error(`unknown rpc ${rpc}`);
  return method;
}

export interface RestRequest {
  httpMethod: string;
  /** Path with the path parameters substituted (URL-encoded) and, on rules without a body, the query. */
  path: string;
  /** JSON body, undefined on rules without a body. */
  body: Json;
}

/**
 * The REST form of an RPC call: `request` is the request message or its JSON
 * (camelCase names). Path parameters come out of the request; with
 * `body: "*"` the rest is the body, with `body: "field"` that field is, and
 * what is left goes to the query string (dotted names for nested fields).
 */
export function restCall(service: DescService, method: DescMethod | string, request: Message | JsonObject = {}): RestRequest {
  const desc = typeof method === "string" ? service.methods.find((m) => m.name === method || m.localName === method) : method;
  if (!desc || desc.parent !== service) throw new Error(`${String(typeof method === "string" ? method : method.name)} is not a method of ${service.typeName}`);
  const rule = getOption(desc, http);
  const [httpMethod, template] = ruleTarget(rule, desc);
  const json: JsonObject = structuredClone(isMessage(request) ? (toJson(desc.input, request) as JsonObject) : request);
  const parsed = parsePathTemplate(template);
  let path = "";
  let segment = 0;
  for (const variable of parsed.variables) {
    path += literalPath(parsed.segments.slice(segment, variable.start));
    const value = String(take(desc.input, json, variable.fieldPath) ?? "");
    path += `/${variable.multiSegment ? value.split("/").map(encodeURIComponent).join("/") : encodeURIComponent(value)}`;
    segment = variable.end;
  }
  path += literalPath(parsed.segments.slice(segment));
  if (parsed.verb !== undefined) path += `:${parsed.verb}`;
  if (rule.body === "*") return { httpMethod, path, body: json };
  let body: Json;
  if (rule.body !== "") {
    const field = desc.input.fields.find((f) => f.name === rule.body);
    if (!field) throw new Error(`body "${rule.body}" is not a field of ${desc.input.typeName}`);
    body = json[field.jsonName] ?? {};
    delete json[field.jsonName];
  }
  const query: string[] = [];
  flattenQuery(json, "", query);
  const qs = query.join("&");
  return { httpMethod, path: qs ? `${path}?${qs}` : path, body };
}

/** Sends an RPC over REST with an optional bearer token. */
export function restFetch(url: string, token: string | undefined, rpc: Rpc, request: Message | JsonObject = {}): Promise<Response> {
  const method = rpcMethod(rpc);
  const { httpMethod, path, body } = restCall(method.parent, method, request);
  return fetch(url + path, {
    method: httpMethod,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

function ruleTarget(rule: HttpRule, method: DescMethod): [string, string] {
  const pattern = rule.pattern;
  if (pattern.case === undefined) throw new Error(`${method.parent.typeName}.${method.name} has no google.api.http rule`);
  if (pattern.case === "custom") return [pattern.value.kind.toUpperCase(), pattern.value.path];
  return [pattern.case.toUpperCase(), pattern.value];
}

function literalPath(segments: readonly { kind: string; value?: string }[]): string {
  return segments
    .map((s) => {
      if (s.kind !== "literal") throw new Error("wildcards outside a variable are not supported by restCall");
      return `/${s.value}`;
    })
    .join("");
}

/** Removes the value at a dotted proto field path from the JSON and returns it. */
function take(message: DescMessage, json: JsonObject, fieldPath: string): Json {
  const names = fieldPath.split(".");
  let desc: DescMessage | undefined = message;
  let at: JsonObject | undefined = json;
  for (const [i, name] of names.entries()) {
    const field: DescField | undefined = desc?.fields.find((f) => f.name === name);
    if (!field) throw new Error(`path field ${fieldPath} is not in ${message.typeName}`);
    if (i === names.length - 1) {
      const value = at?.[field.jsonName];
      if (at) delete at[field.jsonName];
      return value;
    }
    at = at?.[field.jsonName];
    desc = field.fieldKind === "message" ? field.message : undefined;
  }
}

function flattenQuery(json: Json, prefix: string, query: string[]): void {
  for (const [key, value] of Object.entries(json as JsonObject)) {
    const name = prefix + key;
    const add = (v: Json) => query.push(`${encodeURIComponent(name)}=${encodeURIComponent(String(v))}`);
    if (Array.isArray(value)) value.forEach(add);
    else if (value !== null && typeof value === "object") flattenQuery(value, `${name}.`, query);
    else if (value !== undefined) add(value);
  }
}
