// The SAML signing certificate's private key is sealed with the master key like the signing keys: the certificate is
// the same on every start (and replica) of one database, SVC_MASTER_KEY_PREVIOUS re-seals it at start, and a master
// key that does not open it is refused at start.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { samlCertificateAad } from "../../src/crypto/sealer.js";
import { seal, unseal } from "../../src/crypto/secretbox.js";
import type { Server } from "../../src/server.js";
import { PG_URL } from "../support/db.js";
import { bootOn, freshDatabase, type TestDatabase } from "../support/server.js";

const [K1, K2, K3] = [1, 2, 3].map((n) => Buffer.alloc(32, n).toString("base64")) as [string, string, string];
let db: TestDatabase;
let dataDir: string;

beforeAll(async () => {
  db = await freshDatabase({ migrated: true });
  dataDir = await mkdtemp(path.join(tmpdir(), "svc-saml-key-"));
});
afterAll(async () => {
  await db.drop();
  await rm(dataDir, { recursive: true, force: true });
});

const boot = (env: Record<string, string>, logs: string[] = []): Promise<Server> => bootOn(db, dataDir, env, logs);

const certificate = async (s: Server) => (await fetch(`${s.url}/saml/v2/certificate`)).text();

it("keeps one certificate across starts, re-seals it with SVC_MASTER_KEY_PREVIOUS, and refuses a key that does not open it", async () => {
  // Replicas starting together on a new database make one certificate (on PostgreSQL: the embedded database belongs
  // to one process), and a later start keeps it.
  const first = PG_URL ? await Promise.all([boot({ SVC_MASTER_KEY: K1 }), boot({ SVC_MASTER_KEY: K1 })]) : [await boot({ SVC_MASTER_KEY: K1 })];
  const pem = await certificate(first[0] as Server);
  for (const s of first) expect(await certificate(s)).toBe(pem);
  await Promise.all(first.map((s) => s.close()));
  const restarted = await boot({ SVC_MASTER_KEY: K1 });
  expect(await certificate(restarted)).toBe(pem);
  expect(await restarted.db.prisma.samlCertificate.count()).toBe(1);
  await restarted.close();

  const logs: string[] = [];
  const rotated = await boot({ SVC_MASTER_KEY: K2, SVC_MASTER_KEY_PREVIOUS: K1 }, logs);
  expect(logs.some((l) => l.includes("sealed the SAML signing certificate keys again"))).toBe(true);
  expect(await certificate(rotated)).toBe(pem);
  const row = await rotated.db.prisma.samlCertificate.findFirstOrThrow();
  expect(unseal(Buffer.from(K2, "base64"), row.privateKeyEnc, samlCertificateAad(rotated.instanceId, row.id)).length).toBeGreaterThan(1000);
  const stranger = seal(Buffer.from(K3, "base64"), Buffer.alloc(64, 1), samlCertificateAad(rotated.instanceId, row.id));
  await rotated.db.prisma.samlCertificate.update({ where: { id: row.id }, data: { privateKeyEnc: stranger } });
  await rotated.close();
  await expect(boot({ SVC_MASTER_KEY: K2 })).rejects.toThrow(/SVC_MASTER_KEY does not open the SAML signing certificate keys/);
});
