// An action target's signing key is sealed with the master key like svc's other secrets: SVC_MASTER_KEY_PREVIOUS
// re-seals it at start (the key itself unchanged: the endpoint keeps verifying with it), and a master key that does
// not open it is refused at start.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { actionTargetAad } from "../../src/crypto/sealer.js";
import { seal, unseal } from "../../src/crypto/secretbox.js";
import type { Server } from "../../src/server.js";
import { bootOn, freshDatabase, type TestDatabase } from "../support/server.js";

const [K1, K2, K3] = [4, 5, 6].map((n) => Buffer.alloc(32, n).toString("base64")) as [string, string, string];
let db: TestDatabase;
let dataDir: string;

beforeAll(async () => {
  db = await freshDatabase({ migrated: true });
  dataDir = await mkdtemp(path.join(tmpdir(), "svc-action-key-"));
});
afterAll(async () => {
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const boot = (env: Record<string, string>, logs: string[] = []): Promise<Server> => bootOn(db, dataDir, env, logs);

it("re-seals target signing keys with SVC_MASTER_KEY_PREVIOUS and refuses a master key that does not open them", async () => {
  const first = await boot({ SVC_MASTER_KEY: K1 });
  const raw = randomBytes(32);
  const id = "target-1";
  const now = new Date();
  await first.db.prisma.actionTarget.create({
    data: {
      id,
      instanceId: first.instanceId,
      name: "hook",
      endpoint: "https://hooks.example.com",
      timeoutMs: 10_000,
      signingKeyEnc: seal(Buffer.from(K1, "base64"), raw, actionTargetAad(first.instanceId, id)),
      createdAt: now,
      updatedAt: now,
    },
  });
  const instanceId = first.instanceId;
  await first.close();

  const logs: string[] = [];
  const rotated = await boot({ SVC_MASTER_KEY: K2, SVC_MASTER_KEY_PREVIOUS: K1 }, logs);
  expect(logs.some((l) => l.includes("sealed the action target signing keys again"))).toBe(true);
  const row = await rotated.db.prisma.actionTarget.findUniqueOrThrow({ where: { id } });
  expect(unseal(Buffer.from(K2, "base64"), row.signingKeyEnc, actionTargetAad(instanceId, id)).equals(raw)).toBe(true);
  const stranger = seal(Buffer.from(K3, "base64"), raw, actionTargetAad(instanceId, id));
  await rotated.db.prisma.actionTarget.update({ where: { id }, data: { signingKeyEnc: stranger } });
  await rotated.close();
  await expect(boot({ SVC_MASTER_KEY: K2 })).rejects.toThrow(/SVC_MASTER_KEY does not open the action target signing keys/);
});
