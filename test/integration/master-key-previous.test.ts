// Issue 25, finding 10: a SVC_MASTER_KEY_PREVIOUS that can re-seal nothing (the same key as SVC_MASTER_KEY, or a key
// the database was never sealed with) is said at start instead of being accepted silently.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { spawnServer } from "../support/server.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const warned = (logs: Record<string, unknown>[], start: string) => logs.some((l) => l.level === 40 && String(l.msg).startsWith(start));

describe("SVC_MASTER_KEY_PREVIOUS that re-seals nothing (issue 25, finding 10)", () => {
  it("the same key as SVC_MASTER_KEY, or a key that opens nothing, is said at start; a real rotation is not", async () => {
    const base = await mkdtemp(path.join(tmpdir(), "svc-mkprev-"));
    dirs.push(base);
    const dataDir = path.join(base, "data");
    const [a, b, never] = [1, 2, 3].map((n) => Buffer.alloc(32, n).toString("base64")) as [string, string, string];
    const first = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: a });
    expect(await first.stop()).toBe(0);

    const same = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: a, SVC_MASTER_KEY_PREVIOUS: a });
    expect(await same.stop()).toBe(0);
    expect(warned(same.logs, "SVC_MASTER_KEY_PREVIOUS is the same key as SVC_MASTER_KEY")).toBe(true);

    const wrong = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: a, SVC_MASTER_KEY_PREVIOUS: never });
    expect(await wrong.stop()).toBe(0);
    expect(warned(wrong.logs, "SVC_MASTER_KEY_PREVIOUS opens none of the signing keys")).toBe(true);

    const rotating = await spawnServer({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: b, SVC_MASTER_KEY_PREVIOUS: a });
    expect(await rotating.stop()).toBe(0);
    expect(warned(rotating.logs, "sealed the signing keys again")).toBe(true);
    expect(warned(rotating.logs, "SVC_MASTER_KEY_PREVIOUS opens none")).toBe(false);
  }, 240_000);
});
