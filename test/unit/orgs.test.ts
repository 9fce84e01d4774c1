// Pure rules of organizations and their administrators: names, slugs, roles, who can see an organization.
import { describe, expect, it } from "@jest/globals";
import { canSeeOrganization, INSTANCE_ROLES, ORG_ROLES } from "../../src/domain/access/permissions.js";
import type { Ctx, Principal } from "../../src/domain/context.js";
import { DomainError } from "../../src/domain/errors.js";
import { validateRoles } from "../../src/domain/orgs/memberships.js";
import { orgSlug, validateName } from "../../src/domain/orgs/orgs.js";

function reason(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return (e as DomainError).id;
  }
}

describe("orgSlug", () => {
  it("lower-cases, drops accents and joins other runs with one dash", () => {
    expect(orgSlug("ACME Corp.")).toBe("acme-corp");
    expect(orgSlug("Société Générale")).toBe("societe-generale");
    expect(orgSlug("  --Ünïcode__Tëst--  ")).toBe("unicode-test");
  });

  it("falls back to org when nothing is left", () => {
    expect(orgSlug("日本")).toBe("org");
    expect(orgSlug("---")).toBe("org");
  });

  it("stays a DNS label with room for a numeric suffix", () => {
    const slug = orgSlug(`${"a".repeat(55)} b ${"c".repeat(20)}`);
    expect(slug.length).toBeLessThanOrEqual(56);
    expect(slug.endsWith("-")).toBe(false);
  });
});

describe("validateName", () => {
  it("trims and accepts up to 200 characters", () => {
    expect(validateName("  Acme  ")).toBe("Acme");
    expect(validateName("x".repeat(200))).toHaveLength(200);
  });

  it("refuses empty, too long and control characters", () => {
    expect(reason(() => validateName("   "))).toBe("Errors.Org.Name.Missing");
    expect(reason(() => validateName("x".repeat(201)))).toBe("Errors.Org.Name.TooLong");
    expect(reason(() => validateName("a\u0000b"))).toBe("Errors.Org.Name.Invalid");
    expect(reason(() => validateName("a\tb"))).toBe("Errors.Org.Name.Invalid");
  });
});

describe("validateRoles", () => {
  it("deduplicates, keeping the first occurrence order", () => {
    expect(validateRoles(["ORG_AUDITOR", "ORG_OWNER", "ORG_AUDITOR"], ORG_ROLES)).toEqual(["ORG_AUDITOR", "ORG_OWNER"]);
  });

  it("refuses none and unknown roles, and roles of the other table", () => {
    expect(reason(() => validateRoles([], ORG_ROLES))).toBe("Errors.Member.Roles.Missing");
    expect(reason(() => validateRoles(["ORG_OWNER", "NOPE"], ORG_ROLES))).toBe("Errors.Member.Role.Invalid");
    expect(reason(() => validateRoles(["IAM_OWNER"], ORG_ROLES))).toBe("Errors.Member.Role.Invalid");
    expect(reason(() => validateRoles(["ORG_OWNER"], INSTANCE_ROLES))).toBe("Errors.Member.Role.Invalid");
    // Inherited properties are not roles.
    expect(reason(() => validateRoles(["toString"], ORG_ROLES))).toBe("Errors.Member.Role.Invalid");
  });
});

describe("canSeeOrganization", () => {
  const ctx = (p: Partial<Principal>): Ctx =>
    ({ principal: { userId: "u", instanceId: "i", orgId: "home", userType: "HUMAN", instanceRoles: [], orgRoles: new Map(), credentialId: "c", ...p } }) as Ctx;

  it("lets users see their own organization and members the ones they hold roles in", () => {
    expect(canSeeOrganization(ctx({}), "home")).toBe(true);
    expect(canSeeOrganization(ctx({ orgRoles: new Map([["other", ["ORG_AUDITOR"]]]) }), "other")).toBe(true);
    expect(canSeeOrganization(ctx({}), "other")).toBe(false);
  });

  it("lets instance members who read organizations see every one", () => {
    expect(canSeeOrganization(ctx({ instanceRoles: ["IAM_OWNER_VIEWER"] }), "other")).toBe(true);
    expect(canSeeOrganization(ctx({ instanceRoles: ["IAM_OWNER"] }), "other")).toBe(true);
  });
});
