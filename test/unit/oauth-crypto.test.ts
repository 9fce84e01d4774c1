// Master key parsing, AES-256-GCM sealing of signing keys, the embedded
// master key file, and the invalidation rules of the auth caches.
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "@jest/globals";
import { ConfigError, loadConfig, parseMasterKey } from "../../src/config.js";
import { embeddedMasterKey, seal, unseal } from "../../src/crypto/secretbox.js";
import { TaggedCache } from "../../src/store/auth-cache.js";

describe("master key", () => {
  it("reads 32 bytes as hex or base64 and nothing else", () => {
    expect(parseMasterKey("ab".repeat(32))?.length).toBe(32);
    expect(parseMasterKey(Buffer.alloc(32, 9).toString("base64"))?.length).toBe(32);
    expect(parseMasterKey(Buffer.alloc(32, 9).toString("base64url"))?.length).toBe(32);
    expect(parseMasterKey("ab".repeat(31))).toBeUndefined();
    expect(parseMasterKey(Buffer.alloc(16).toString("base64"))).toBeUndefined();
    expect(parseMasterKey("not a key")).toBeUndefined();
  });

  it("is required with PostgreSQL, with a message naming the variable", () => {
    expect(() => loadConfig({ SVC_DATABASE_URL: "postgresql://x@127.0.0.1/db" })).toThrow(/SVC_MASTER_KEY is required/);
    expect(() => loadConfig({ SVC_MASTER_KEY: "short" })).toThrow(ConfigError);
    const c = loadConfig({ SVC_DATABASE_URL: "postgresql://x@127.0.0.1/db", SVC_MASTER_KEY: "ab".repeat(32) });
    expect(c.masterKey?.length).toBe(32);
    expect(c.accessTokenLifetimeClientCredentials).toBe(43200);
    expect(c.accessTokenLifetimeJwtProfile).toBe(3600);
    expect(() => loadConfig({ SVC_SIGNING_KEY_OVERLAP: "60" })).toThrow(/SVC_SIGNING_KEY_OVERLAP/);
  });

  it("is generated once into the data directory with mode 0600 on the embedded database", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "svc-mk-"));
    try {
      const none = async () => false;
      const first = await embeddedMasterKey(dir, none);
      expect(first.generated).toBe(true);
      expect((await stat(first.file)).mode & 0o777).toBe(0o600);
      const again = await embeddedMasterKey(dir, async () => true);
      expect(again.generated).toBe(false);
      expect(again.key.equals(first.key)).toBe(true);
      expect(parseMasterKey(await readFile(first.file, "utf8"))?.equals(first.key)).toBe(true);
      // Gone while the database holds sealed keys: refused, nothing written.
      await rm(first.file);
      await expect(embeddedMasterKey(dir, async () => true)).rejects.toThrow(/master\.key is missing/);
      await expect(stat(first.file)).rejects.toThrow(/ENOENT/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("sealing", () => {
  const key = Buffer.alloc(32, 1);
  it("round-trips, and refuses another key, other additional data or altered bytes", () => {
    const sealed = seal(key, Buffer.from("private key"), "row-1");
    expect(unseal(key, sealed, "row-1").toString()).toBe("private key");
    expect(() => unseal(Buffer.alloc(32, 2), sealed, "row-1")).toThrow();
    expect(() => unseal(key, sealed, "row-2")).toThrow();
    const altered = Uint8Array.from(sealed);
    altered[20] = (altered[20] ?? 0) ^ 1;
    expect(() => unseal(key, altered, "row-1")).toThrow();
    expect(() => unseal(key, new Uint8Array(5), "row-1")).toThrow();
  });
});

describe("TaggedCache", () => {
  it("drops entries by user or organization and refuses answers loaded before an invalidation", () => {
    const c = new TaggedCache<string>();
    let gen = c.generation();
    c.set("a", "A", gen, { userId: "u1", orgId: "o1" });
    c.set("b", "B", gen, { userId: "u2", orgId: "o1" });
    c.set("c", "C", gen, { userId: "u3", orgId: "o2" });
    c.invalidate({ userId: "u1" });
    expect(c.get("a")).toBeUndefined();
    expect(c.get("b")).toBe("B");
    c.invalidate({ orgId: "o1" });
    expect(c.get("b")).toBeUndefined();
    expect(c.get("c")).toBe("C");
    // A lookup that started before an invalidation must not store its (possibly stale) answer.
    gen = c.generation();
    c.invalidate({ userId: "someone" });
    c.set("d", "D", gen, { userId: "u4" });
    expect(c.get("d")).toBeUndefined();
    c.invalidate({ all: true });
    expect(c.get("c")).toBeUndefined();
  });

  it("stores nothing while disabled, and expires entries", async () => {
    const c = new TaggedCache<string>();
    c.enabled = false;
    c.set("a", "A", c.generation(), {});
    expect(c.get("a")).toBeUndefined();
    c.enabled = true;
    c.set("b", "B", c.generation(), {}, 5);
    await new Promise((r) => setTimeout(r, 20));
    expect(c.get("b")).toBeUndefined();
  });

  it("shares one read among concurrent misses of a key, unless an invalidation came since it started", async () => {
    const c = new TaggedCache<string>();
    let reads = 0;
    const release: (() => void)[] = [];
    const read = (value: string) => () => {
      reads++;
      return new Promise<{ value: string; tags: { userId: string } }>((resolve) => release.push(() => resolve({ value, tags: { userId: "u1" } })));
    };
    // Ten requests miss at once: one read, one answer for all.
    const first = Array.from({ length: 10 }, () => c.load("k", read("old")));
    expect(reads).toBe(1);
    // After an invalidation a request does not join the read that started before it: it reads again.
    c.invalidate({ userId: "u1" });
    const later = c.load("k", read("new"));
    const laterStill = c.load("k", read("unused"));
    expect(reads).toBe(2);
    for (const r of release) r();
    expect(await Promise.all(first)).toEqual(Array(10).fill("old"));
    expect(await later).toBe("new");
    expect(await laterStill).toBe("new");
    // The read from before the invalidation was not stored; the one after it was, and answers without a read.
    expect(await c.load("k", read("unused"))).toBe("new");
    expect(reads).toBe(2);
    // A failed read fails its joiners and is not kept: the next miss reads again.
    const failing = () => {
      reads++;
      return Promise.reject(new Error("database down"));
    };
    await expect(Promise.all([c.load("x", failing), c.load("x", failing)])).rejects.toThrow("database down");
    expect(reads).toBe(3);
    expect(await c.load("x", async () => ({ value: "X", tags: {} }))).toBe("X");
    // A read that finds nothing to keep stores nothing.
    expect(await c.load("z", async () => undefined)).toBeUndefined();
    expect(await c.load("z", async () => ({ value: "Z", tags: {} }))).toBe("Z");
    // While caching is off (the invalidation listener is down), nobody joins another's read.
    c.enabled = false;
    reads = 0;
    const both = Promise.all([c.load("y", read("Y1")), c.load("y", read("Y2"))]);
    for (const r of release.splice(0)) r();
    expect(await both).toEqual(["Y1", "Y2"]);
    expect(reads).toBe(2);
  });
});
