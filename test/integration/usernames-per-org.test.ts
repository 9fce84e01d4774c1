// Usernames are unique per organization (issue 11, finding 5): two organizations may hold the same name, a rename
// tells nothing about other organizations, SCIM provisioning is not blocked by another organization's names, the
// login name and a machine user's client id stay unambiguous, and the instance setting usernamesUniqueInInstance
// restores instance-wide uniqueness under an advisory lock.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { expectError, newUser, scim } from "../fixtures/scim/client.js";
import { admin, call, fails, ok } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { addMachineSecret, caller, createMachine, createOrg, defaultOrgId } from "../support/users.js";

let t: TestServer;
let orgA: string;
let orgB: string;
let domainB: string;
let managerB: { userId: string; pat: string };

const createUser = (token: string, organizationId: string, username: string) =>
  call(t, "rest", token, "CreateUser", { organizationId, username, machine: { name: username } });
const setWide = (on: boolean) => call(t, "rest", t.pat, "SetDomainSettings", { settings: { loginNameIncludesDomain: true, usernamesUniqueInInstance: on } });
const token = (clientId: string, secret: string) =>
  fetch(`${t.url}/oauth/v2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", client_id: clientId, client_secret: secret, scope: "openid" }),
  });

beforeAll(async () => {
  t = await startTestServer();
  orgA = await defaultOrgId(t);
  orgB = await createOrg(t, "Org B");
  domainB = ((await admin(t, "GetOrganizationByID", { organizationId: orgB })) as { organization: { primaryDomain: string } }).organization.primaryDomain;
  managerB = await caller(t, orgB, "manager-b", ["ORG_USER_MANAGER"]);
});
afterAll(() => t.stop());

describe("usernames unique per organization", () => {
  it("lets two organizations create the same username, and refuses it twice in one (any case)", async () => {
    expect((await createUser(t.pat, orgA, "shared-name")).code).toBe("ok");
    expect((await createUser(managerB.pat, orgB, "Shared-Name")).code).toBe("ok");
    const dup = await createUser(managerB.pat, orgB, "SHARED-NAME");
    expect({ code: dup.code, reason: dup.reason }).toEqual({ code: "already_exists", reason: "Errors.User.AlreadyExists" });
  });

  it("renames onto a name used in another organization: the same answer as a free name", async () => {
    await createMachine(t, orgA, "only-in-a");
    const id = await createMachine(t, orgB, "renamed-b");
    const onto = await call(t, "rest", managerB.pat, "UpdateUser", { userId: id, username: "only-in-a" });
    const free = await call(t, "rest", managerB.pat, "UpdateUser", { userId: id, username: "never-used-anywhere" });
    expect([onto.code, onto.status, free.code, free.status]).toEqual(["ok", 200, "ok", 200]);
  });

  it("provisions over SCIM in organization B a userName that exists in organization A", async () => {
    expect((await scim(t, t.pat, "POST", `/scim/v2/${orgA}/Users`, newUser("provisioned@example.com"))).status).toBe(201);
    const b = await scim(t, managerB.pat, "POST", `/scim/v2/${orgB}/Users`, newUser("provisioned@example.com"));
    expect(b.status).toBe(201);
    // Each organization's filter sees its own user only.
    const list = await scim(t, managerB.pat, "GET", `/scim/v2/${orgB}/Users?filter=${encodeURIComponent('userName eq "provisioned@example.com"')}`);
    expect(list.body.Resources.map((r: { id: string }) => r.id)).toEqual([b.body.id]);
    // Within one organization the name is still taken.
    expectError(await scim(t, managerB.pat, "POST", `/scim/v2/${orgB}/Users`, newUser("Provisioned@example.com")), 409, "uniqueness");
  });

  it("finds one user by login name among namesakes", async () => {
    const inA = await createMachine(t, orgA, "login-namesake");
    const inB = await createMachine(t, orgB, "login-namesake");
    const byLogin = (loginName: string) =>
      admin(t, "ListUsers", { queries: [{ loginNameQuery: { loginName, method: "TEXT_QUERY_METHOD_EQUALS" } }] }) as Promise<{ result?: { userId: string }[] }>;
    expect((await byLogin(`login-namesake@${domainB}`)).result?.map((u) => u.userId)).toEqual([inB]);
    const both = (await byLogin("login-namesake")).result?.map((u) => u.userId) ?? [];
    expect(both.sort()).toEqual([inA, inB].sort());
  });

  it("keeps a machine user's client id with its owner when another organization takes the name later", async () => {
    const first = await createMachine(t, orgA, "ci-bot");
    const secretA = await addMachineSecret(t, first);
    const later = await createMachine(t, orgB, "ci-bot");
    const secretB = await addMachineSecret(t, later);
    // The bare username still names the first one: its client keeps working, the namesake cannot use it.
    expect((await token("ci-bot", secretA)).status).toBe(200);
    expect((await token("ci-bot", secretB)).status).toBe(401);
    // The login name names each of them.
    expect((await token(`ci-bot@${domainB}`, secretB)).status).toBe(200);
    expect((await token(`ci-bot@${domainB}`, secretA)).status).toBe(401);
    const res = (await (await token(`ci-bot@${domainB}`, secretB)).json()) as { access_token: string };
    const me = await fetch(`${t.url}/oidc/v1/userinfo`, { headers: { authorization: `Bearer ${res.access_token}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { sub: string }).sub).toBe(later);
  });
});

describe("the instance setting usernamesUniqueInInstance", () => {
  it("cannot be turned on while a username exists in several organizations", async () => {
    const r = await setWide(true);
    expect({ code: r.code, reason: r.reason }).toEqual({ code: "failed_precondition", reason: "Errors.Settings.Domain.UsernamesShared" });
    expect((r.body as { message: string }).message).toContain('"shared-name"');
  });

  it("once on, refuses a name of another organization with AlreadyExists (create, rename, SCIM)", async () => {
    // Make every name unique again.
    const users = (await admin(t, "ListUsers", { query: { limit: 1000 } })) as {
      result: { userId: string; username: string; details: { resourceOwner: string } }[];
    };
    const seen = new Set<string>();
    for (const u of users.result) {
      if (seen.has(u.username.toLowerCase())) await admin(t, "DeleteUser", { userId: u.userId });
      else seen.add(u.username.toLowerCase());
    }
    expect((await setWide(true)).code).toBe("ok");
    const settings = (await admin(t, "GetDomainSettings", { organizationId: orgB })) as { settings: { usernamesUniqueInInstance?: boolean } };
    expect(settings.settings.usernamesUniqueInInstance).toBe(true);

    await createMachine(t, orgA, "wide-name");
    const created = await createUser(managerB.pat, orgB, "Wide-Name");
    expect({ code: created.code, reason: created.reason }).toEqual({ code: "already_exists", reason: "Errors.User.AlreadyExists" });
    const id = await createMachine(t, orgB, "wide-other");
    await fails(t, "connect", managerB.pat, "UpdateUser", { userId: id, username: "WIDE-NAME" }, "already_exists", "Errors.User.AlreadyExists");
    expectError(await scim(t, managerB.pat, "POST", `/scim/v2/${orgB}/Users`, newUser("wide-name")), 409, "uniqueness");
    // Renaming a user to its own name in another case is no clash.
    await ok(t, "rest", managerB.pat, "UpdateUser", { userId: id, username: "WIDE-other" });
  });

  it("serialises concurrent creates of one name in different organizations: exactly one wins", async () => {
    const orgs = [orgA, orgB, await createOrg(t, "Org C"), await createOrg(t, "Org D")];
    for (let round = 0; round < 3; round++) {
      const replies = await Promise.all(orgs.map((o) => createUser(t.pat, o, `race-${round}`)));
      expect(replies.map((r) => r.code).sort()).toEqual(["already_exists", "already_exists", "already_exists", "ok"]);
    }
  });

  it("an organization's override does not change it", async () => {
    await ok(t, "rest", t.pat, "SetDomainSettings", { organizationId: orgB, settings: { loginNameIncludesDomain: true, usernamesUniqueInInstance: false } });
    const b = (await admin(t, "GetDomainSettings", { organizationId: orgB })) as { settings: { usernamesUniqueInInstance?: boolean } };
    expect(b.settings.usernamesUniqueInInstance).toBe(true);
    await createMachine(t, orgA, "still-wide");
    expect((await createUser(managerB.pat, orgB, "still-wide")).code).toBe("already_exists");
    // Off again: per organization.
    expect((await setWide(false)).code).toBe("ok");
    expect((await createUser(managerB.pat, orgB, "still-wide")).code).toBe("ok");
  });
});
