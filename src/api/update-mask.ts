// Partial updates (AIP-134): an update changes the fields its update_mask names, or without a mask the fields the
// request populates; every other field keeps the value the resource has now. The merge works on the proto messages, so
// that any resource message (each kind of setting) is merged the same way, whatever its domain shape.
import { create, type DescField, type DescMessage, isFieldSet, type MessageShape } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { invalidArgument } from "../domain/errors.js";

const MAX_PATHS = 100;

const badPath = (path: string, why: string) =>
  invalidArgument("Errors.UpdateMask.Invalid", `update_mask: ${why} "${path.slice(0, 100)}"`, { field: "update_mask" });

type Obj = Record<string, unknown>;

/** The field a mask path segment names (its proto name, or its JSON name as some clients send). */
function fieldOf(desc: DescMessage, segment: string): DescField | undefined {
  return desc.fields.find((f) => f.name === segment) ?? desc.fields.find((f) => f.jsonName === segment);
}

/**
 * `current` with the fields of `patch` that `mask` names (`resource` the resource field's name, accepted as a path
 * prefix, e.g. "settings.max_password_attempts"). "*" takes the whole patch. No mask, or an empty one: the fields the
 * patch populates (a non-zero scalar or enum, a non-empty list, a present message, which replaces the whole
 * sub-message). A nested path ("embedded_iframe.enabled") changes one field of a sub-message. An unknown path is
 * InvalidArgument on update_mask.
 */
export function applyUpdateMask<S extends DescMessage>(
  schema: S,
  current: MessageShape<S>,
  patch: MessageShape<S>,
  mask: FieldMask | undefined,
  resource: string,
): MessageShape<S> {
  const paths = mask?.paths.length ? mask.paths : undefined;
  if (paths && paths.length > MAX_PATHS) throw badPath(String(paths.length), `at most ${MAX_PATHS} paths, got`);
  if (paths?.includes("*")) {
    if (paths.length > 1) throw badPath("*", "the wildcard stands alone:");
    return patch;
  }
  const merged = structuredClone(current) as Obj;
  const source = patch as unknown as Obj;
  if (!paths) {
    for (const f of schema.fields) if (isFieldSet(patch, f)) merged[f.localName] = source[f.localName];
    return merged as MessageShape<S>;
  }
  for (const raw of new Set(paths)) {
    const segments = (raw.startsWith(`${resource}.`) ? raw.slice(resource.length + 1) : raw).split(".");
    let desc: DescMessage = schema;
    let target = merged;
    let from: Obj | undefined = source;
    for (const [i, segment] of segments.entries()) {
      const field = fieldOf(desc, segment);
      if (!field) throw badPath(raw, "no such field");
      const last = i === segments.length - 1;
      if (last) {
        target[field.localName] =
          from?.[field.localName] ?? (field.fieldKind === "message" ? undefined : structuredClone(create(desc) as Obj)[field.localName]);
        break;
      }
      if (field.fieldKind !== "message") throw badPath(raw, "not a message field:");
      const next = field.message;
      target[field.localName] ??= create(next);
      target = target[field.localName] as Obj;
      from = from?.[field.localName] as Obj | undefined;
      desc = next;
    }
  }
  return merged as MessageShape<S>;
}
