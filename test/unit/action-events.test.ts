// Events out (issue 27), the pure parts: how an event condition is written and what it matches
// (src/domain/actions/executions.ts), and the retry delays of a failed delivery (src/actions/deliveries.ts).
import { describe, expect, it } from "@jest/globals";
import { backoff } from "../../src/actions/deliveries.js";
import { conditionKey, conditionMatches } from "../../src/domain/actions/executions.js";
import { DomainError } from "../../src/domain/errors.js";

describe("event conditions", () => {
  it("are stored as the type, the group's prefix with .*, or *", () => {
    expect(conditionKey({ event: "user.human.added" })).toBe("user.human.added");
    expect(conditionKey({ group: "user" })).toBe("user.*");
    expect(conditionKey({ group: "user.*" })).toBe("user.*");
    expect(conditionKey({ all: true })).toBe("*");
  });

  it("refuse what is not a dotted lower-case type", () => {
    for (const c of [
      { event: "" },
      { event: "User.Added" },
      { event: "user..added" },
      { event: "user.*" },
      { group: "*" },
      { group: "user.**" },
      { event: "a".repeat(201) },
    ]) {
      expect(() => conditionKey(c)).toThrow(DomainError);
    }
  });

  it("match a type exactly, a group by its prefix up to a dot, all everything", () => {
    expect(conditionMatches("user.human.added", "user.human.added")).toBe(true);
    expect(conditionMatches("user.human.added", "user.human.added.more")).toBe(false);
    expect(conditionMatches("user.*", "user.locked")).toBe(true);
    expect(conditionMatches("user.*", "user.human.added")).toBe(true);
    // A group is a prefix of whole words: "user.*" is not "username.changed" nor "user" itself.
    expect(conditionMatches("user.*", "username.changed")).toBe(false);
    expect(conditionMatches("user.*", "user")).toBe(false);
    expect(conditionMatches("*", "org.added")).toBe(true);
  });
});

describe("retry delays", () => {
  it("double from the base, between half and all of the step, capped at an hour", () => {
    expect(backoff(1_000, 1, () => 0)).toBe(500);
    expect(backoff(1_000, 1, () => 1)).toBe(1_000);
    expect(backoff(1_000, 4, () => 0)).toBe(4_000);
    expect(backoff(1_000, 4, () => 1)).toBe(8_000);
    expect(backoff(1_000, 40, () => 1)).toBe(3_600_000);
    expect(backoff(1_000, 40, () => 0)).toBe(1_800_000);
    for (let attempt = 1; attempt <= 12; attempt++) {
      const d = backoff(250, attempt);
      expect(d).toBeGreaterThanOrEqual(Math.min(3_600_000, 250 * 2 ** (attempt - 1)) / 2);
      expect(d).toBeLessThanOrEqual(Math.min(3_600_000, 250 * 2 ** (attempt - 1)));
    }
  });
});
