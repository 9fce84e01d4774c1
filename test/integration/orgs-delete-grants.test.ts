// Deleting an organization also removes what was granted in its name on other
// organizations' projects (rows without a foreign key to it).
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { rest, startTestServer, type TestServer } from "../support/server.js";
import { createHuman, createOrg, defaultOrgId, json } from "../support/users.js";

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(() => t.stop());

describe("DeleteOrganization", () => {
  it("removes the project grants it received and the user grants made in its name", async () => {
    const owner = await defaultOrgId(t);
    const receiver = await createOrg(t, "Receiver");
    const project = await json<{ projectId: string }>(await rest(t.url, t.pat, "POST", "/v2/projects/new", { organizationId: owner, name: "Shared" }));
    expect((await rest(t.url, t.pat, "POST", `/v2/projects/${project.projectId}/roles`, { roleKey: "reader", displayName: "Reader" })).status).toBe(200);
    const grant = await json<{ projectGrantId: string }>(
      await rest(t.url, t.pat, "POST", `/v2/projects/${project.projectId}/grants`, { grantedOrganizationId: receiver, roleKeys: ["reader"] }),
    );
    // A user of the project's own org, granted in the receiving org's name through the project grant.
    const user = await createHuman(t, owner, "guest");
    const added = await rest(t.url, t.pat, "POST", "/v2/authorizations/new", {
      userId: user,
      projectId: project.projectId,
      organizationId: receiver,
      projectGrantId: grant.projectGrantId,
      roleKeys: ["reader"],
    });
    expect(added.status).toBe(200);
    expect(await t.server.db.prisma.userGrant.count({ where: { orgId: receiver } })).toBe(1);

    expect((await rest(t.url, t.pat, "DELETE", `/v2/organizations/${receiver}`)).status).toBe(200);
    expect(await t.server.db.prisma.userGrant.count({ where: { orgId: receiver } })).toBe(0);
    expect(await t.server.db.prisma.projectGrant.count({ where: { grantedOrgId: receiver } })).toBe(0);
    // The project and its owner's user are untouched.
    expect((await rest(t.url, t.pat, "GET", `/v2/projects/${project.projectId}`)).status).toBe(200);
    expect((await rest(t.url, t.pat, "GET", `/v2/users/${user}`)).status).toBe(200);
  });
});
