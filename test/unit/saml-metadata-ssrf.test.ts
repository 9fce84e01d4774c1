// Which addresses the metadata URL fetch may connect to by default: the public internet only (no traffic is sent here).
import { describe, expect, it } from "@jest/globals";
import { isPublicAddress } from "../../src/saml/metadata-fetch.js";

describe("isPublicAddress", () => {
  it("refuses loopback, private, shared, link-local, multicast, reserved and documentation ranges, v4 and v6", () => {
    for (const a of [
      "127.0.0.1",
      "127.255.255.254",
      "0.0.0.0",
      "10.1.2.3",
      "100.64.0.1",
      "169.254.169.254",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "192.0.0.8",
      "198.18.0.1",
      "224.0.0.1",
      "255.255.255.255",
      "::",
      "::1",
      "::ffff:127.0.0.1",
      "::ffff:10.0.0.1",
      "::ffff:a9fe:a9fe",
      "64:ff9b::a9fe:a9fe",
      "fc00::1",
      "fd12:3456::1",
      "fe80::1",
      "ff02::1",
      "2002:7f00:1::",
      "not an address",
      "",
    ]) {
      expect([a, isPublicAddress(a)]).toEqual([a, false]);
    }
  });

  it("accepts public addresses", () => {
    for (const a of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "11.0.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      expect([a, isPublicAddress(a)]).toEqual([a, true]);
    }
  });
});
