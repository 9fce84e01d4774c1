import { describe, expect, it } from "@jest/globals";
import { loadConfig } from "../../src/config.js";

describe("configuration defaults", () => {
  it("listens on the loopback interface unless SVC_HOST says otherwise (no accidental exposure on first start)", () => {
    expect(loadConfig({}).host).toBe("127.0.0.1");
    expect(loadConfig({ SVC_HOST: "0.0.0.0" }).host).toBe("0.0.0.0");
  });
});
