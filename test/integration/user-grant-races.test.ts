// Issue 25, finding 6: concurrent UpdateUserGrant calls are serialised on the grant: each audit event names as its
// previous roles what the one before it set, so the history never skips a step (before, the previous roles were read
// before the transaction, and racing updates all named the same ones).
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { AuthorizationService } from "../../gen/svc/authorization/v2/authorization_service_pb.js";
import { machine } from "../support/orgs.js";
import { type ProjectWorld, project, projectWorld } from "../support/projects.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { auth } from "../support/users.js";

let t: TestServer;
let w: ProjectWorld;
beforeAll(async () => {
  t = await startTestServer();
  w = await projectWorld(t, "ugr");
}, 60_000);
afterAll(() => t.stop());

describe("UpdateUserGrant races (issue 25, finding 6)", () => {
  it("ten concurrent updates leave a history in which each names the roles the one before set", async () => {
    const roles = Array.from({ length: 10 }, (_, i) => `r${i}`);
    const projectId = await project(t, w.orgA, "Grant races", ["start", ...roles]);
    const user = await machine(t, w.orgA, "ugr-holder");
    const authz = createClient(AuthorizationService, createGrpcTransport({ baseUrl: t.url }));
    const headers = auth(w.ppmA.pat);
    const { grantId } = await authz.addUserGrant({ userId: user.userId, projectId, roleKeys: ["start"] }, headers);
    await Promise.all(roles.map((r) => authz.updateUserGrant({ grantId, roleKeys: [r] }, headers)));
    const events = (await (
      await rest(t.url, t.pat, "POST", "/v2/events", { aggregateId: grantId, eventTypes: ["user.grant.changed"], query: { asc: true } })
    ).json()) as { result: { payload: { roleKeys: string[]; previousRoleKeys: string[] } }[] };
    const steps = events.result.map((e) => [e.payload.previousRoleKeys.join(","), e.payload.roleKeys.join(",")]);
    expect(steps).toHaveLength(10);
    // A chain from "start": each step starts where the one before ended.
    let at = "start";
    for (const [from, to] of steps) {
      expect(from).toBe(at);
      at = to as string;
    }
  }, 60_000);
});
