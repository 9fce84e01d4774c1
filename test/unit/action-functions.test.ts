// How svc merges what action targets answer (src/domain/actions/functions.ts): targets add, in order, and never change
// what is set or reserved; refusals go to the target's log claim. And the Svc-Signature header (src/actions/runner.ts).
import { createHmac } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { signatureHeader } from "../../src/actions/runner.js";
import { appendClaims, appendedAttributes, logClaim, SAML_NAME_FORMATS } from "../../src/domain/actions/functions.js";

describe("appendClaims", () => {
  it("adds new claims in the targets' order; the first target to set a claim wins", () => {
    const out = appendClaims({ sub: "u1", email: "a@example.com" }, [
      { targetName: "one", body: { append_claims: [{ key: "dept", value: "R&D" }] } },
      {
        targetName: "two",
        body: {
          append_claims: [
            { key: "dept", value: "Sales" },
            { key: "level", value: 3 },
          ],
        },
      },
    ]);
    expect(out).toEqual({ sub: "u1", email: "a@example.com", dept: "R&D", level: 3, [logClaim("two")]: ["claim dept is already set: not changed"] });
  });

  it("refuses protocol claims, urn:svc:iam: claims, claims already set and malformed entries, noting each", () => {
    const base = { sub: "u1", email: "a@example.com" };
    const out = appendClaims(base, [
      {
        targetName: "t",
        body: {
          append_claims: [
            { key: "exp", value: 0 },
            { key: "acr", value: "x" },
            { key: "urn:svc:iam:org:project:roles", value: {} },
            { key: "email", value: "b@example.com" },
            { key: "", value: 1 },
            { key: "k".repeat(257), value: 1 },
            { value: 1 },
            "just a string",
            { key: "absent" },
          ],
          append_log_claims: ["note", 42],
        },
      },
    ]);
    expect(out.email).toBe("a@example.com");
    expect(out.exp).toBeUndefined();
    expect(out.acr).toBeUndefined();
    expect(out.absent).toBeUndefined();
    expect(out[logClaim("t")]).toHaveLength(10);
    expect((out[logClaim("t")] as string[]).at(-1)).toBe("note");
    expect(base).toEqual({ sub: "u1", email: "a@example.com" });
  });

  it("treats keys like Object.prototype's as claim names, never as the object's prototype", () => {
    const out = appendClaims({}, [
      {
        targetName: "t",
        body: {
          append_claims: [
            { key: "constructor", value: "c" },
            { key: "toString", value: "s" },
            { key: "__proto__", value: { polluted: true } },
          ],
        },
      },
    ]);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.parse(JSON.stringify(out))).toEqual({ constructor: "c", toString: "s", [logClaim("t")]: ["claim __proto__ is reserved: not set"] });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("ignores an append_claims that is not an array, and caps the log", () => {
    const out = appendClaims({}, [{ targetName: "t", body: { append_claims: { key: "x", value: 1 }, append_log_claims: Array(80).fill("x".repeat(2000)) } }]);
    expect(out.x).toBeUndefined();
    const log = out[logClaim("t")] as string[];
    expect(log[0]).toBe("append_claims must be an array: ignored");
    expect(log).toHaveLength(50);
    expect(log.every((e) => e.length <= 1000)).toBe(true);
  });
});

describe("appendedAttributes", () => {
  it("keeps svc's attributes, checks the name format and the values", () => {
    const { attributes, notes } = appendedAttributes(
      ["UserID", "Email"],
      [
        {
          targetName: "t",
          body: {
            append_attribute: [
              { name: "groups", value: ["a", "b"] },
              { name: "uri", name_format: SAML_NAME_FORMATS.uri, value: ["x"] },
              { name: "Email", value: ["evil"] },
              { name: "groups", value: ["again"] },
              { name: "format", name_format: "urn:nope", value: ["x"] },
              { name: "empty", value: [] },
              { name: "number", value: [1] },
              { name: "long", value: ["x".repeat(4097)] },
            ],
          },
        },
      ],
    );
    expect(attributes).toEqual([
      { name: "groups", nameFormat: SAML_NAME_FORMATS.basic, values: ["a", "b"] },
      { name: "uri", nameFormat: SAML_NAME_FORMATS.uri, values: ["x"] },
    ]);
    expect(notes).toHaveLength(6);
  });
});

it("signs t.body with HMAC-SHA256 under the key", () => {
  const key = Buffer.alloc(32, 9);
  const header = signatureHeader(key, 1_700_000_000, '{"a":1}');
  expect(header).toBe(`t=1700000000,v1=${createHmac("sha256", key).update('1700000000.{"a":1}').digest("hex")}`);
});
