// The paging every v2 list shares (src/domain/list.ts): limits, and how far a total is counted.
import { describe, expect, it } from "@jest/globals";
import { countLimit, page, totalOf } from "../../src/domain/list.js";

describe("page", () => {
  it("counts up to max(1000, offset + limit) unless the exact total is asked for", () => {
    expect(page(undefined)).toEqual({ offset: 0, limit: 100, asc: false, countUpTo: 1000 });
    expect(page({ offset: 2000n, limit: 50 }).countUpTo).toBe(2050);
    expect(page({ limit: 10, exactTotal: true }).countUpTo).toBeUndefined();
  });

  it("reads one row past the bound, so that exactly the bound is told from more", () => {
    const p = page({ limit: 10 });
    expect(countLimit(p)).toBe(1001);
    expect(totalOf(1000, p)).toEqual({ total: 1000, totalIsLowerBound: false });
    expect(totalOf(1001, p)).toEqual({ total: 1000, totalIsLowerBound: true });
    expect(countLimit(page({ exactTotal: true }))).toBeUndefined();
    expect(totalOf(123_456, page({ exactTotal: true }))).toEqual({ total: 123_456, totalIsLowerBound: false });
  });

  it("refuses limits above 1000 and offsets beyond 2^31 - 1", () => {
    expect(() => page({ limit: 1001 })).toThrow("limit must be at most 1000");
    expect(() => page({ offset: 2n ** 31n })).toThrow("offset is too large");
  });
});
