// Timestamps at the edge of what a store can hold (issue 11, finding 1): an
// expiry the protobuf range accepts but that rounds past year 9999 is refused
// before anything is written, and a list never fails on one stored row.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createMachine, defaultOrgId, project } from "../support/fixtures.js";
import { admin, call, fails, VIAS, type Via } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgId: string;

beforeAll(async () => {
  t = await startTestServer();
  orgId = await defaultOrgId(t);
});
afterAll(() => t.stop());

const EDGE = "9999-12-31T23:59:59.9999Z";
const LAST_MS = "9999-12-31T23:59:59.999Z";

async function apiApp(name: string): Promise<{ projectId: string; appId: string }> {
  const projectId = await project(t, orgId, `${name} project`);
  const app = await admin(t, "CreateApplication", { projectId, name, api: { authMethodType: "API_AUTH_METHOD_TYPE_PRIVATE_KEY_JWT" } });
  return { projectId, appId: app.appId };
}

describe.each(VIAS)("credential expiry beyond year 9999 via %s", (via: Via) => {
  it("AddPersonalAccessToken refuses it and writes nothing; lists keep working", async () => {
    const userId = await createMachine(t, orgId, `edge-pat-${via}`);
    await fails(t, via, t.pat, "AddPersonalAccessToken", { userId, expirationDate: EDGE }, "invalid_argument", "Errors.Timestamp.OutOfRange");
    const list = await call(t, via, t.pat, "ListPersonalAccessTokens", { userId });
    expect(list.code).toBe("ok");
    expect(list.body.result ?? []).toEqual([]);
  });

  it("AddKey (machine key) refuses it", async () => {
    const userId = await createMachine(t, orgId, `edge-key-${via}`);
    await fails(t, via, t.pat, "AddKey", { userId, expirationDate: EDGE }, "invalid_argument", "Errors.Timestamp.OutOfRange");
  });

  it("AddApplicationKey refuses it", async () => {
    const { projectId, appId } = await apiApp(`edge-app-${via}`);
    await fails(t, via, t.pat, "AddApplicationKey", { projectId, appId, expirationDate: EDGE }, "invalid_argument", "Errors.Timestamp.OutOfRange");
  });

  it("accepts the last millisecond of year 9999 and lists it", async () => {
    const userId = await createMachine(t, orgId, `edge-last-${via}`);
    const added = await call(t, via, t.pat, "AddPersonalAccessToken", { userId, expirationDate: LAST_MS });
    expect(added.code).toBe("ok");
    const list = await call(t, via, t.pat, "ListPersonalAccessTokens", { userId });
    expect(list.code).toBe("ok");
    expect(list.body.result?.[0]?.expirationDate).toBe(LAST_MS);
  });
});

describe("a stored instant past year 9999 (written before this check existed)", () => {
  it("does not break the lists that show it", async () => {
    const userId = await createMachine(t, orgId, "edge-stored");
    const { id } = await admin(t, "AddPersonalAccessToken", { userId, expirationDate: LAST_MS });
    const key = await admin(t, "AddKey", { userId, expirationDate: LAST_MS });
    await t.server.db.prisma.$executeRawUnsafe(`UPDATE "PersonalAccessToken" SET "expiresAt" = '10000-01-01T00:00:00Z' WHERE id = $1`, id);
    await t.server.db.prisma.$executeRawUnsafe(`UPDATE "MachineKey" SET "expiresAt" = '10000-01-01T00:00:00Z' WHERE id = $1`, key.keyId);
    for (const via of VIAS) {
      const pats = await call(t, via, t.pat, "ListPersonalAccessTokens", { userId });
      expect({ via, code: pats.code }).toEqual({ via, code: "ok" });
      expect(pats.body.result?.[0]?.expirationDate).toBe(LAST_MS);
      const all = await call(t, via, t.pat, "ListPersonalAccessTokens", {});
      expect({ via, code: all.code }).toEqual({ via, code: "ok" });
      const keys = await call(t, via, t.pat, "ListKeys", { userId });
      expect({ via, code: keys.code }).toEqual({ via, code: "ok" });
      expect(keys.body.result?.[0]?.expirationDate).toBe(LAST_MS);
    }
  });
});
