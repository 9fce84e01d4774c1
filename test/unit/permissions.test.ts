// The permission table and the checks built on it: pure rules, no database
// (authorizeOverRoles reads the target's roles through a stand-in store).
import { describe, expect, it } from "@jest/globals";
import {
  authorize,
  authorizeOverRoles,
  authorizeUserGrantWrite,
  hasInstancePermission,
  holds,
  INSTANCE_ROLES,
  listScope,
  ORG_ROLES,
  type Permission,
  projectGrantees,
  readableOrgs,
} from "../../src/domain/access/permissions.js";
import type { Ctx } from "../../src/domain/context.js";
import { DomainError, notFound } from "../../src/domain/errors.js";
import type { HeldRoles } from "../../src/store/grants.js";

const A = "org-a";
const B = "org-b";

interface Caller {
  userId?: string;
  instanceRoles?: string[];
  orgRoles?: Record<string, string[]>;
}

/** A context for `caller`; `held` is what the store answers about another user's roles (and `lookups` counts the asks). */
function ctxOf(caller: Caller, held: HeldRoles = { instance: null, orgs: [] }) {
  const lookups: string[] = [];
  const ctx = {
    instanceId: "inst",
    principal: {
      userId: caller.userId ?? "caller",
      instanceId: "inst",
      orgId: A,
      userType: "HUMAN",
      instanceRoles: caller.instanceRoles ?? [],
      orgRoles: new Map(Object.entries(caller.orgRoles ?? {})),
      credentialId: "pat",
    },
    store: {
      grants: {
        heldRoles: async (_instanceId: string, userId: string) => {
          lookups.push(userId);
          return held;
        },
      },
    },
  } as unknown as Ctx;
  return Object.assign(ctx, { lookups });
}

/** The error `fn` throws: its kind and id, or "allowed". */
function outcome(fn: () => void): string {
  try {
    fn();
    return "allowed";
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return `${(e as DomainError).kind} ${(e as DomainError).id}`;
  }
}

async function outcomeOf(p: Promise<void>): Promise<string> {
  try {
    await p;
    return "allowed";
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return `${(e as DomainError).kind} ${(e as DomainError).id}`;
  }
}

const READ: Permission[] = [
  "iam.read",
  "iam.member.read",
  "org.read",
  "org.member.read",
  "user.read",
  "policy.read",
  "events.read",
  "project.read",
  "project.role.read",
  "project.grant.read",
  "project.app.read",
  "user.grant.read",
  "idp.read",
  "iam.action.read",
  "action.read",
];
const WRITE: Permission[] = [
  "iam.write",
  "iam.member.write",
  "org.write",
  "org.create",
  "org.delete",
  "org.member.write",
  "user.write",
  "user.delete",
  "user.credential.write",
  "user.authn.write",
  "session.read",
  "session.delete",
  "policy.write",
  "project.write",
  "project.delete",
  "project.role.write",
  "project.grant.write",
  "project.app.write",
  "user.grant.write",
  "idp.write",
  "iam.action.write",
  "action.write",
];
const ALL = [...READ, ...WRITE];
const DENIED = "PermissionDenied Errors.Permission.Denied";
const hidden = () => notFound("Errors.Thing.NotFound", "thing not found");

describe("the role table", () => {
  const sorted = (ps: readonly string[]) => [...ps].sort();

  it("keeps the instance's actions (its targets, the functions' executions) to the instance roles; an organization's own to its owners", () => {
    for (const [role, permissions] of Object.entries(ORG_ROLES)) {
      expect([role, permissions.filter((p) => p.startsWith("iam.action."))]).toEqual([role, []]);
    }
    expect(INSTANCE_ROLES.IAM_LOGIN_CLIENT).not.toContain("iam.action.read");
    expect(outcome(() => authorize(ctxOf({ orgRoles: { [A]: ["ORG_OWNER"] } }), "iam.action.write", null))).toBe(DENIED);
    expect(outcome(() => authorize(ctxOf({ instanceRoles: ["IAM_OWNER_VIEWER"] }), "iam.action.write", null))).toBe(DENIED);
    expect(outcome(() => authorize(ctxOf({ instanceRoles: ["IAM_OWNER_VIEWER"] }), "iam.action.read", null))).toBe("allowed");
    expect(outcome(() => authorize(ctxOf({ orgRoles: { [A]: ["ORG_OWNER"] } }), "action.write", A))).toBe("allowed");
    expect(outcome(() => authorize(ctxOf({ orgRoles: { [A]: ["ORG_OWNER"] } }), "action.write", B))).toBe(DENIED);
    expect(outcome(() => authorize(ctxOf({ orgRoles: { [A]: ["ORG_USER_MANAGER"] } }), "action.write", A))).toBe(DENIED);
  });

  it("gives the instance roles everything, or everything readable", () => {
    expect(Object.keys(INSTANCE_ROLES).sort()).toEqual(["IAM_LOGIN_CLIENT", "IAM_OWNER", "IAM_OWNER_VIEWER", "IAM_TOKEN_EXCHANGER"]);
    expect(sorted(INSTANCE_ROLES.IAM_OWNER)).toEqual(sorted(ALL));
    expect(sorted(INSTANCE_ROLES.IAM_OWNER_VIEWER)).toEqual(sorted(READ));
  });

  it("gives login clients sessions and authentication methods, and no administration", () => {
    const login = INSTANCE_ROLES.IAM_LOGIN_CLIENT;
    for (const p of ["session.read", "session.write", "session.delete", "session.link", "user.authn.write", "user.read", "idp.read"] as const) {
      expect(login).toContain(p);
    }
    for (const p of [
      "user.write",
      "user.delete",
      "user.credential.write",
      "iam.member.write",
      "org.write",
      "policy.write",
      "project.write",
      "idp.write",
    ] as const) {
      expect(login).not.toContain(p);
    }
    // Only a login client creates sessions and finishes auth requests; an administrator does not.
    expect(INSTANCE_ROLES.IAM_OWNER).not.toContain("session.write");
    expect(INSTANCE_ROLES.IAM_OWNER).not.toContain("session.link");
  });

  it("keeps token exchange to its own roles, never an administrator's", () => {
    expect(INSTANCE_ROLES.IAM_TOKEN_EXCHANGER).toEqual(["oauth.token_exchange"]);
    expect(ORG_ROLES.ORG_TOKEN_EXCHANGER).toEqual(["oauth.token_exchange"]);
    for (const [role, perms] of [...Object.entries(INSTANCE_ROLES), ...Object.entries(ORG_ROLES)]) {
      if (!role.endsWith("_TOKEN_EXCHANGER")) expect([role, perms.includes("oauth.token_exchange")]).toEqual([role, false]);
    }
  });

  it("gives each organization role its permissions, never an instance-wide one", () => {
    expect(Object.keys(ORG_ROLES).sort()).toEqual(["ORG_AUDITOR", "ORG_OWNER", "ORG_PROJECT_PERMISSION_MANAGER", "ORG_TOKEN_EXCHANGER", "ORG_USER_MANAGER"]);
    expect(sorted(ORG_ROLES.ORG_OWNER)).toEqual(sorted(ALL.filter((p) => !p.startsWith("iam.") && !p.startsWith("session.") && p !== "org.create")));
    expect(sorted(ORG_ROLES.ORG_AUDITOR)).toEqual(sorted(READ.filter((p) => !p.startsWith("iam."))));
    expect(sorted(ORG_ROLES.ORG_USER_MANAGER)).toEqual(
      sorted(["org.read", "user.read", "user.write", "user.delete", "user.credential.write", "user.authn.write", "user.grant.read", "policy.read"]),
    );
    expect(sorted(ORG_ROLES.ORG_PROJECT_PERMISSION_MANAGER)).toEqual(
      sorted([
        "org.read",
        "project.read",
        "project.role.read",
        "project.grant.read",
        "project.grant.write",
        "user.read",
        "user.grant.read",
        "user.grant.write",
      ]),
    );
    for (const perms of Object.values(ORG_ROLES)) expect(perms.filter((p) => p.startsWith("iam.") || p === "org.create")).toEqual([]);
  });
});

describe("authorize", () => {
  it("allows each organization role exactly its permissions in its organization, and none in another", () => {
    for (const [role, perms] of Object.entries(ORG_ROLES)) {
      const ctx = ctxOf({ orgRoles: { [A]: [role] } });
      for (const p of ALL) {
        expect([role, p, outcome(() => authorize(ctx, p, A))]).toEqual([role, p, perms.includes(p) ? "allowed" : DENIED]);
        expect([role, p, outcome(() => authorize(ctx, p, B))]).toEqual([role, p, DENIED]);
        expect(holds(ctx, p, A)).toBe(perms.includes(p));
        expect(holds(ctx, p, B)).toBe(false);
      }
    }
  });

  it("allows each instance role its permissions in every organization and instance-wide", () => {
    for (const [role, perms] of Object.entries(INSTANCE_ROLES)) {
      const ctx = ctxOf({ instanceRoles: [role] });
      for (const p of ALL) {
        const expected = perms.includes(p) ? "allowed" : DENIED;
        expect([role, p, outcome(() => authorize(ctx, p, A)), outcome(() => authorize(ctx, p, null))]).toEqual([role, p, expected, expected]);
        expect(hasInstancePermission(ctx, p)).toBe(perms.includes(p));
      }
    }
  });

  it("hides the resource from callers with no membership in its organization, not from members lacking the permission", () => {
    expect(outcome(() => authorize(ctxOf({ orgRoles: { [B]: ["ORG_OWNER"] } }), "user.read", A, hidden))).toBe("NotFound Errors.Thing.NotFound");
    expect(outcome(() => authorize(ctxOf({}), "user.read", A, hidden))).toBe("NotFound Errors.Thing.NotFound");
    expect(outcome(() => authorize(ctxOf({ orgRoles: { [A]: ["ORG_AUDITOR"] } }), "user.write", A, hidden))).toBe(DENIED);
    // An instance member knows every organization: a missing permission is a denial.
    expect(outcome(() => authorize(ctxOf({ instanceRoles: ["IAM_OWNER_VIEWER"] }), "user.write", A, hidden))).toBe(DENIED);
    // Without an organization there is nothing to hide.
    expect(outcome(() => authorize(ctxOf({ orgRoles: { [A]: ["ORG_OWNER"] } }), "org.create", null, hidden))).toBe(DENIED);
  });

  it("takes the union of several roles", () => {
    const ctx = ctxOf({ orgRoles: { [A]: ["ORG_USER_MANAGER", "ORG_PROJECT_PERMISSION_MANAGER"] } });
    expect(holds(ctx, "user.delete", A)).toBe(true);
    expect(holds(ctx, "project.grant.write", A)).toBe(true);
    expect(holds(ctx, "project.write", A)).toBe(false);
  });

  it("knows no unknown role", () => {
    expect(holds(ctxOf({ orgRoles: { [A]: ["PROJECT_OWNER"] } }), "project.read", A)).toBe(false);
    expect(holds(ctxOf({ instanceRoles: ["ORG_OWNER"] }), "org.read", A)).toBe(false);
  });
});

describe("readableOrgs and listScope", () => {
  it("are every organization for an instance role holding the permission", () => {
    const ctx = ctxOf({ instanceRoles: ["IAM_OWNER_VIEWER"] });
    expect(readableOrgs(ctx, "user.read")).toBe("all");
    expect(listScope(ctx, "user.read")).toBeUndefined();
  });

  it("are the organizations whose roles hold the permission", () => {
    const ctx = ctxOf({ orgRoles: { [A]: ["ORG_USER_MANAGER"], [B]: ["ORG_PROJECT_PERMISSION_MANAGER"], "org-c": ["ORG_AUDITOR"] } });
    expect(listScope(ctx, "user.read")?.sort()).toEqual([A, B, "org-c"]);
    expect(listScope(ctx, "user.grant.read")?.sort()).toEqual([A, B, "org-c"]);
    expect(listScope(ctx, "project.read")?.sort()).toEqual([B, "org-c"]);
    expect(readableOrgs(ctx, "user.write")).toEqual([A]);
    expect(readableOrgs(ctx, "org.create")).toEqual([]);
  });

  it("denies a list the caller could read nothing of, rather than answering an empty one", () => {
    const ctx = ctxOf({ orgRoles: { [A]: ["ORG_USER_MANAGER"] } });
    expect(outcome(() => listScope(ctx, "project.read"))).toBe(DENIED);
    expect(() => listScope(ctx, "project.read")).toThrow("missing permission project.read");
    expect(outcome(() => listScope(ctxOf({ instanceRoles: ["IAM_OWNER_VIEWER"] }), "user.write"))).toBe(DENIED);
  });
});

describe("projectGrantees", () => {
  it("leaves the decision to the owning organization for its members and instance-wide holders", () => {
    expect(projectGrantees(ctxOf({ orgRoles: { [A]: ["ORG_AUDITOR"] } }), A, "project.write")).toBeUndefined();
    expect(projectGrantees(ctxOf({ instanceRoles: ["IAM_OWNER_VIEWER"] }), A, "project.read")).toBeUndefined();
    expect(projectGrantees(ctxOf({ instanceRoles: ["IAM_OWNER_VIEWER"] }), A)).toBeUndefined();
  });

  it("names the caller's other organizations whose grant would show the project", () => {
    const ctx = ctxOf({ orgRoles: { [B]: ["ORG_AUDITOR"], "org-c": ["ORG_USER_MANAGER"] } });
    expect(projectGrantees(ctx, A, "project.read")).toEqual([B]);
    expect(projectGrantees(ctx, A)?.sort()).toEqual([B, "org-c"]);
    expect(projectGrantees(ctxOf({}), A)).toEqual([]);
  });
});

describe("authorizeUserGrantWrite", () => {
  it("needs user.grant.write in the organization the grant is held in", () => {
    expect(outcome(() => authorizeUserGrantWrite(ctxOf({ orgRoles: { [A]: ["ORG_PROJECT_PERMISSION_MANAGER"] } }), A, undefined, hidden))).toBe("allowed");
    expect(outcome(() => authorizeUserGrantWrite(ctxOf({ orgRoles: { [A]: ["ORG_AUDITOR"] } }), A, undefined, hidden))).toBe(DENIED);
    expect(outcome(() => authorizeUserGrantWrite(ctxOf({ orgRoles: { [B]: ["ORG_OWNER"] } }), A, undefined, hidden))).toBe("NotFound Errors.Thing.NotFound");
  });

  it("leaves the roles of a granted project to the receiving organization", () => {
    const owner = ctxOf({ orgRoles: { [A]: ["ORG_OWNER"] } });
    expect(outcome(() => authorizeUserGrantWrite(owner, B, A, hidden))).toBe("PermissionDenied Errors.UserGrant.ReceivingOrgOnly");
    expect(outcome(() => authorizeUserGrantWrite(ctxOf({ orgRoles: { [B]: ["ORG_OWNER"] } }), B, A, hidden))).toBe("allowed");
    expect(outcome(() => authorizeUserGrantWrite(ctxOf({ instanceRoles: ["IAM_OWNER"] }), B, A, hidden))).toBe("allowed");
  });
});

describe("authorizeOverRoles", () => {
  const MORE = "PermissionDenied Errors.User.MorePrivileged";
  const target = { id: "target", orgId: A };
  const iamOwner: HeldRoles = { instance: { roles: ["IAM_OWNER"] }, orgs: [] };
  const ownerOfA: HeldRoles = { instance: null, orgs: [{ orgId: A, roles: ["ORG_OWNER"] }] };

  it("lets anyone act on their own account without looking at its roles", async () => {
    const ctx = ctxOf({ userId: "target", orgRoles: { [A]: ["ORG_USER_MANAGER"] } }, iamOwner);
    expect(await outcomeOf(authorizeOverRoles(ctx, target))).toBe("allowed");
    expect(ctx.lookups).toEqual([]);
  });

  it("needs iam.member.write over a user holding instance roles", async () => {
    expect(await outcomeOf(authorizeOverRoles(ctxOf({ orgRoles: { [A]: ["ORG_OWNER"] } }, iamOwner), target))).toBe(MORE);
    expect(await outcomeOf(authorizeOverRoles(ctxOf({ instanceRoles: ["IAM_OWNER_VIEWER"] }, iamOwner), target))).toBe(MORE);
    const owner = ctxOf({ instanceRoles: ["IAM_OWNER"] }, iamOwner);
    expect(await outcomeOf(authorizeOverRoles(owner, target))).toBe("allowed");
    // An IAM_OWNER can grant every role: nothing to look up.
    expect(owner.lookups).toEqual([]);
  });

  it("needs org.member.write in the user's own organization when it holds roles there", async () => {
    expect(await outcomeOf(authorizeOverRoles(ctxOf({ orgRoles: { [A]: ["ORG_USER_MANAGER"] } }, ownerOfA), target))).toBe(MORE);
    expect(await outcomeOf(authorizeOverRoles(ctxOf({ orgRoles: { [A]: ["ORG_OWNER"] } }, ownerOfA), target))).toBe("allowed");
  });

  it("does not count roles held in other organizations: the user's own organization manages it", async () => {
    const alsoOwnerOfB: HeldRoles = { instance: null, orgs: [{ orgId: B, roles: ["ORG_OWNER"] }] };
    expect(await outcomeOf(authorizeOverRoles(ctxOf({ orgRoles: { [A]: ["ORG_USER_MANAGER"] } }, alsoOwnerOfB), target))).toBe("allowed");
  });

  it("does not limit anything over a user without roles (memberships with none count as none)", async () => {
    const none: HeldRoles = { instance: { roles: [] }, orgs: [{ orgId: A, roles: [] }] };
    const ctx = ctxOf({ orgRoles: { [A]: ["ORG_USER_MANAGER"] } }, none);
    expect(await outcomeOf(authorizeOverRoles(ctx, target))).toBe("allowed");
    expect(ctx.lookups).toEqual(["target"]);
  });
});
