import { describe, expect, it } from "@jest/globals";
import { illFormedText } from "../../src/domain/well-formed.js";

describe("illFormedText", () => {
  it("names the first string or member name, in document order, that holds an unpaired surrogate", () => {
    expect(illFormedText({ a: "x", b: ["y", { c: "z" }] })).toBeUndefined();
    // A pair is one character (U+1F600): well-formed.
    expect(illFormedText({ a: "\ud83d\ude00" })).toBeUndefined();
    expect(illFormedText("\ud800")).toBe("(the value)");
    expect(illFormedText({ a: "ok", b: ["ok", { c: "\udc00" }], d: "\ud800" })).toBe("b[1].c");
    expect(illFormedText({ list: ["ok", "x\ud83d"] })).toBe("list[1]");
    expect(illFormedText({ outer: { "k\ud800": 1 } })).toBe("outer.k\ufffd");
  });

  it("leaves bytes, numbers, bigints and booleans alone, and walks deep values without recursing", () => {
    expect(illFormedText({ b: new Uint8Array([0xd8, 0x00]), n: 1, big: 10n, t: true, nil: null })).toBeUndefined();
    let deep: unknown = "\ud800";
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(illFormedText(deep)).toMatch(/^(\[0\]){100000}$/);
  });
});
