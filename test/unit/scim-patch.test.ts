// PATCH application on a resource document without a database.
import { describe, expect, it } from "@jest/globals";
import { applyPatch, parsePath } from "../../src/http/scim/patch.js";

const doc = {
  userName: "u",
  name: { givenName: "G", familyName: "F" },
  emails: [
    { value: "w@example.com", type: "work", primary: true },
    { value: "h@example.com", type: "home", primary: false },
  ],
  active: true,
};

describe("parsePath", () => {
  it("reads attributes, sub-attributes, value filters and the core URN prefix", () => {
    expect(parsePath("Name.GivenName")).toEqual({ attr: "name", sub: "givenName" });
    expect(parsePath('emails[type eq "work"].value')).toMatchObject({ attr: "emails", sub: "value", filter: { kind: "compare" } });
    expect(parsePath("urn:ietf:params:scim:schemas:core:2.0:User:userName")).toEqual({ attr: "userName" });
    expect(() => parsePath("meta.created")).toThrow(expect.objectContaining({ scimType: "mutability" }));
    expect(() => parsePath("emails[")).toThrow(expect.objectContaining({ scimType: "invalidPath" }));
    expect(() => parsePath("urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department")).toThrow(
      expect.objectContaining({ scimType: "invalidPath" }),
    );
  });
});

describe("applyPatch", () => {
  it("never changes its input", () => {
    const copy = structuredClone(doc);
    applyPatch(doc, [{ op: "remove", path: "emails" }]);
    expect(doc).toEqual(copy);
  });

  it("demotes the old primary when another entry becomes primary", () => {
    const out = applyPatch(doc, [{ op: "replace", path: 'emails[type eq "home"].primary', value: "True" }]);
    expect((out.emails as { primary: boolean }[]).map((e) => e.primary)).toEqual([false, true]);
  });

  it("treats attribute names in values case-insensitively", () => {
    const out = applyPatch(doc, [{ op: "replace", value: { DisplayName: "D", NAME: { GIVENNAME: "X" } } }]);
    expect(out).toMatchObject({ displayName: "D", name: { givenName: "X", familyName: "F" } });
  });

  it("removes the entries a filter matches, and only those", () => {
    const out = applyPatch(doc, [{ op: "remove", path: 'emails[value ew "@example.com" and not (primary eq true)]' }]);
    expect(out.emails).toEqual([doc.emails[0]]);
  });
});
