// Who may read and write settings: for every SettingsService RPC one allowed
// and the denied callers, over REST and Connect JSON. Machine users with
// PATs hold the roles; memberships are inserted directly (setup only).

import { fromBinary } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgA: string;
let orgB: string;

type Json = Record<string, unknown>;
type Transport = "rest" | "connect";
type Op = "Get" | "Set" | "Reset";

const KINDS: { path: string; rpc: string; value: Json }[] = [
  { path: "password/complexity", rpc: "PasswordComplexity", value: { minLength: "12", requiresLowercase: true } },
  { path: "password/expiry", rpc: "PasswordExpiry", value: { maxAgeDays: "60" } },
  { path: "lockout", rpc: "Lockout", value: { maxPasswordAttempts: "3" } },
  { path: "login", rpc: "Login", value: { allowUsernamePassword: true, forceMfa: true } },
  { path: "security", rpc: "Security", value: { allowedCorsOrigins: ["https://a.example.com"] } },
  { path: "branding", rpc: "Branding", value: { primaryColor: "#010203", backgroundColor: "#ffffff", warnColor: "#ff0000", fontColor: "#000000" } },
  { path: "domain", rpc: "Domain", value: { loginNameIncludesDomain: false } },
  // Added by the attack review of 2 December 2026 (the language settings landed that day without a row here).
  { path: "language", rpc: "Language", value: { defaultLanguage: "de" } },
];
type Kind = (typeof KINDS)[number];

async function call(transport: Transport, pat: string, op: Op, kind: Kind, req: Json): Promise<{ status: number; reason?: string }> {
  let res: Response;
  if (transport === "rest") {
    const org = typeof req.organizationId === "string" && op !== "Set" ? `?organizationId=${encodeURIComponent(req.organizationId)}` : "";
    res = await rest(t.url, pat, op === "Get" ? "GET" : op === "Set" ? "PUT" : "DELETE", `/v2/settings/${kind.path}${org}`, op === "Set" ? req : undefined);
  } else {
    res = await fetch(`${t.url}/svc.settings.v2.SettingsService/${op}${kind.rpc}Settings`, {
      method: "POST",
      headers: { authorization: `Bearer ${pat}`, "content-type": "application/json" },
      body: JSON.stringify(req),
    });
  }
  const body = (await res.json()) as { details?: { reason?: string; type?: string; value?: string }[] };
  const d = res.status === 200 ? undefined : body.details?.[0];
  const reason = d?.reason ?? (d?.type === "google.rpc.ErrorInfo" && d.value ? fromBinary(ErrorInfoSchema, base64Decode(d.value)).reason : undefined);
  return { status: res.status, reason };
}

/** A machine user of `orgId` with a PAT; roles are granted by the caller. */
async function machine(orgId: string, username: string): Promise<{ id: string; pat: string }> {
  const created = await rest(t.url, t.pat, "POST", "/v2/users/new", { organizationId: orgId, username, machine: { name: username } });
  expect(created.status).toBe(200);
  const { id } = (await created.json()) as { id: string };
  const pat = await rest(t.url, t.pat, "POST", `/v2/users/${id}/pats`, {});
  expect(pat.status).toBe(200);
  return { id, pat: ((await pat.json()) as { token: string }).token };
}

const callers: Record<string, string> = {};

beforeAll(async () => {
  t = await startTestServer();
  const res = await rest(t.url, t.pat, "GET", "/v2/instance");
  orgA = ((await res.json()) as { instance: { defaultOrganizationId: string } }).instance.defaultOrganizationId;
  const db = t.server.db.prisma;
  orgB = (await db.organization.create({ data: { id: "org-b", instanceId: t.server.instanceId, name: "Org B", primaryDomain: "org-b.localhost" } })).id;
  callers.iamOwner = t.pat;
  const viewer = await machine(orgA, "iam-viewer");
  await db.instanceMember.create({ data: { instanceId: t.server.instanceId, userId: viewer.id, roles: ["IAM_OWNER_VIEWER"] } });
  callers.iamViewer = viewer.pat;
  callers.noRoles = (await machine(orgA, "no-roles")).pat;
  for (const [name, org, role] of [
    ["ownerA", orgA, "ORG_OWNER"],
    ["auditorA", orgA, "ORG_AUDITOR"],
    ["userManagerA", orgA, "ORG_USER_MANAGER"],
    ["projectManagerA", orgA, "ORG_PROJECT_PERMISSION_MANAGER"],
    ["ownerB", orgB, "ORG_OWNER"],
  ] as const) {
    const m = await machine(org, name.toLowerCase());
    await db.orgMember.create({ data: { orgId: org, userId: m.id, roles: [role] } });
    callers[name] = m.pat;
  }
});
afterAll(() => t.stop());

type Expect = [caller: string, status: number];
const DENIED = "Errors.Permission.Denied";
const HIDDEN = "Errors.Org.NotFound";

async function expectTable(transport: Transport, kind: Kind, op: Op, req: Json, table: Expect[]) {
  for (const [caller, status] of table) {
    const got = await call(transport, callers[caller] as string, op, kind, req);
    const reason = status === 403 ? DENIED : status === 404 ? HIDDEN : undefined;
    expect([kind.rpc, op, caller, got.status, got.reason]).toEqual([kind.rpc, op, caller, status, reason]);
  }
}

describe.each(["rest", "connect"] as const)("permissions over %s", (transport) => {
  it("GetPasswordComplexitySettings: any caller for the instance and its own org; NotFound for others' orgs", async () => {
    const k = KINDS[0] as Kind;
    await expectTable(transport, k, "Get", {}, [
      ["noRoles", 200],
      ["ownerB", 200],
      ["auditorA", 200],
    ]);
    await expectTable(transport, k, "Get", { organizationId: orgA }, [
      ["noRoles", 200],
      ["projectManagerA", 200],
      ["iamViewer", 200],
      ["ownerB", 404],
    ]);
    await expectTable(transport, k, "Get", { organizationId: orgB }, [
      ["ownerB", 200],
      ["noRoles", 404],
      ["auditorA", 404],
    ]);
  });

  for (const k of KINDS.slice(1)) {
    it(`Get${k.rpc}Settings: iam.read for the instance, policy.read in the org`, async () => {
      await expectTable(transport, k, "Get", {}, [
        ["iamOwner", 200],
        ["iamViewer", 200],
        ["noRoles", 403],
        ["ownerA", 403],
        ["auditorA", 403],
      ]);
      await expectTable(transport, k, "Get", { organizationId: orgA }, [
        ["iamViewer", 200],
        ["ownerA", 200],
        ["auditorA", 200],
        ["userManagerA", 200],
        // A member of the org without policy.read.
        ["projectManagerA", 403],
        // Users of the org without a role, and owners of another org, learn nothing.
        ["noRoles", 404],
        ["ownerB", 404],
      ]);
    });
  }

  for (const k of KINDS) {
    it(`Set${k.rpc}Settings and Reset${k.rpc}Settings: iam.write for the instance, policy.write in the org`, async () => {
      const instance = { settings: k.value };
      await expectTable(transport, k, "Set", instance, [
        ["iamViewer", 403],
        ["ownerA", 403],
        ["auditorA", 403],
        ["noRoles", 403],
        ["iamOwner", 200],
      ]);
      const inA = { organizationId: orgA, settings: k.value };
      await expectTable(transport, k, "Set", inA, [
        ["auditorA", 403],
        ["userManagerA", 403],
        ["projectManagerA", 403],
        ["iamViewer", 403],
        ["noRoles", 404],
        ["ownerB", 404],
        ["ownerA", 200],
      ]);
      const resetA = { organizationId: orgA };
      await expectTable(transport, k, "Reset", resetA, [
        ["auditorA", 403],
        ["userManagerA", 403],
        ["iamViewer", 403],
        ["noRoles", 404],
        ["ownerB", 404],
        ["ownerA", 200],
      ]);
      // The instance owner may write every organization's settings.
      await expectTable(transport, k, "Set", inA, [["iamOwner", 200]]);
      await expectTable(transport, k, "Reset", resetA, [["iamOwner", 200]]);
      // Org B's owner manages org B.
      await expectTable(transport, k, "Set", { organizationId: orgB, settings: k.value }, [["ownerB", 200]]);
      await expectTable(transport, k, "Reset", { organizationId: orgB }, [["ownerB", 200]]);
    });
  }

  it("refuses every settings RPC without a valid token", async () => {
    for (const k of KINDS) {
      for (const op of ["Get", "Set", "Reset"] as const) {
        const got = await call(transport, "bm90LWEtdG9rZW4tYXQtYWxsLWp1c3QtdGV4dA", op, k, {
          organizationId: orgA,
          ...(op === "Set" ? { settings: k.value } : {}),
        });
        expect([k.rpc, op, got.status, got.reason]).toEqual([k.rpc, op, 401, "Errors.Token.Invalid"]);
      }
    }
  });
});
