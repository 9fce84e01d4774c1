// SettingsService through the real server: every RPC over REST and Connect
// JSON, a subset over gRPC; built-in defaults, instance default → org
// override → reset resolution, validation, the audit events of each write,
// and the password complexity actually governing CreateUser.

import { fromBinary } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ResourceOwnerType } from "../../gen/svc/settings/v2/settings_pb.js";
import { SettingsService } from "../../gen/svc/settings/v2/settings_service_pb.js";
import { rest, startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let orgA: string;
let orgB: string;

type Json = Record<string, unknown>;
type Transport = "rest" | "connect";
type Op = "Get" | "Set" | "Reset";

interface Answer {
  status: number;
  body: Json;
  reason?: string;
}

/**
 * One settings RPC over REST (GET/PUT/DELETE /v2/settings/...) or Connect JSON. A Set names the whole setting
 * (`updateMask: "*"`) unless the request has an update mask of its own or `partial` is given: most tests here set whole
 * values; "partial updates" below tests what a Set without a mask changes.
 */
async function call(transport: Transport, pat: string, op: Op, kind: Kind, req: Json = {}, partial = false): Promise<Answer> {
  if (op === "Set" && req.settings !== undefined && req.updateMask === undefined && !partial) req = { ...req, updateMask: "*" };
  let res: Response;
  if (transport === "rest") {
    const org = typeof req.organizationId === "string" && op !== "Set" ? `?organizationId=${encodeURIComponent(req.organizationId)}` : "";
    const method = op === "Get" ? "GET" : op === "Set" ? "PUT" : "DELETE";
    res = await rest(t.url, pat, method, `/v2/settings/${kind.path}${org}`, op === "Set" ? req : undefined);
  } else {
    res = await fetch(`${t.url}/svc.settings.v2.SettingsService/${op}${kind.rpc}Settings`, {
      method: "POST",
      headers: { authorization: `Bearer ${pat}`, "content-type": "application/json" },
      body: JSON.stringify(req),
    });
  }
  const body = (await res.json()) as Json;
  return { status: res.status, body, reason: errorReason(body) };
}

/** The ErrorInfo reason of a REST (Any JSON) or Connect (base64 detail) error body. */
function errorReason(body: Json): string | undefined {
  const details = (body.details ?? []) as { reason?: string; type?: string; value?: string }[];
  const d = details[0];
  if (!d) return undefined;
  if (d.reason) return d.reason;
  if (d.type === "google.rpc.ErrorInfo" && d.value) return fromBinary(ErrorInfoSchema, base64Decode(d.value)).reason;
  return undefined;
}

/** What proto3 JSON emits: fields at their zero value are left out (message fields stay). */
function emitted(v: Json): Json {
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === false || x === 0 || x === "0" || x === "" || (Array.isArray(x) && x.length === 0)) continue;
    out[k] = x && typeof x === "object" && !Array.isArray(x) ? emitted(x as Json) : x;
  }
  return out;
}

const INSTANCE = "RESOURCE_OWNER_TYPE_INSTANCE";
const ORG = "RESOURCE_OWNER_TYPE_ORG";

interface Kind {
  path: string;
  rpc: string;
  /** The built-in default as proto3 JSON emits it. */
  defaults: Json;
  instanceValue: Json;
  orgValue: Json;
  invalid: { settings: Json; reason: string }[];
}

const KINDS: Kind[] = [
  {
    path: "password/complexity",
    rpc: "PasswordComplexity",
    defaults: { minLength: "8", requiresUppercase: true, requiresLowercase: true, requiresNumber: true, requiresSymbol: true },
    instanceValue: { minLength: "10", requiresUppercase: true, requiresLowercase: true, requiresNumber: true, requiresSymbol: false, historyCount: 5 },
    orgValue: { minLength: "6", requiresUppercase: false, requiresLowercase: true, requiresNumber: false, requiresSymbol: false },
    invalid: [
      { settings: { minLength: "0" }, reason: "Errors.Settings.PasswordComplexity.MinLengthInvalid" },
      { settings: { minLength: "257", requiresSymbol: true }, reason: "Errors.Settings.PasswordComplexity.MinLengthInvalid" },
      { settings: { minLength: "8", historyCount: 25 }, reason: "Errors.Settings.PasswordComplexity.HistoryCountInvalid" },
    ],
  },
  {
    path: "password/expiry",
    rpc: "PasswordExpiry",
    defaults: {},
    instanceValue: { maxAgeDays: "90", expireWarnDays: "7" },
    orgValue: { maxAgeDays: "30", expireWarnDays: "0" },
    invalid: [
      { settings: { maxAgeDays: "10", expireWarnDays: "11" }, reason: "Errors.Settings.PasswordExpiry.WarnDaysInvalid" },
      { settings: { maxAgeDays: "3651" }, reason: "Errors.Settings.PasswordExpiry.MaxAgeInvalid" },
    ],
  },
  {
    path: "lockout",
    rpc: "Lockout",
    // A lock lasts 5 minutes by default, doubling up to an hour (unset durations read as these defaults).
    defaults: { maxPasswordAttempts: "10", maxOtpAttempts: "5", lockoutDurationSeconds: "300", maxLockoutDurationSeconds: "3600" },
    instanceValue: { maxPasswordAttempts: "5", maxOtpAttempts: "3", lockoutDurationSeconds: "300", maxLockoutDurationSeconds: "3600" },
    orgValue: { maxPasswordAttempts: "10", maxOtpAttempts: "0", lockoutDurationSeconds: "300", maxLockoutDurationSeconds: "3600" },
    invalid: [{ settings: { maxPasswordAttempts: "1001" }, reason: "Errors.Settings.Lockout.MaxAttemptsInvalid" }],
  },
  {
    path: "login",
    rpc: "Login",
    defaults: {
      allowUsernamePassword: true,
      allowExternalIdp: true,
      passkeysAllowed: true,
      passwordCheckLifetime: "864000s",
      externalLoginCheckLifetime: "864000s",
      mfaInitSkipLifetime: "2592000s",
      secondFactorCheckLifetime: "64800s",
      multiFactorCheckLifetime: "43200s",
      secondFactors: ["SECOND_FACTOR_TYPE_OTP", "SECOND_FACTOR_TYPE_U2F", "SECOND_FACTOR_TYPE_OTP_EMAIL"],
      multiFactors: ["MULTI_FACTOR_TYPE_U2F_WITH_VERIFICATION"],
    },
    instanceValue: {
      allowUsernamePassword: true,
      allowRegister: true,
      allowExternalIdp: false,
      forceMfa: false,
      passkeysAllowed: true,
      ignoreUnknownUsernames: false,
      passwordCheckLifetime: "3600s",
      externalLoginCheckLifetime: "7200s",
      mfaInitSkipLifetime: "0s",
      secondFactorCheckLifetime: "1800s",
      multiFactorCheckLifetime: "900s",
      secondFactors: ["SECOND_FACTOR_TYPE_OTP", "SECOND_FACTOR_TYPE_OTP_EMAIL"],
      multiFactors: ["MULTI_FACTOR_TYPE_U2F_WITH_VERIFICATION"],
    },
    orgValue: {
      allowUsernamePassword: true,
      allowRegister: false,
      allowExternalIdp: true,
      forceMfa: true,
      passkeysAllowed: false,
      ignoreUnknownUsernames: true,
      passwordCheckLifetime: "60s",
      externalLoginCheckLifetime: "60s",
      mfaInitSkipLifetime: "60s",
      secondFactorCheckLifetime: "60s",
      multiFactorCheckLifetime: "60s",
      secondFactors: ["SECOND_FACTOR_TYPE_U2F"],
      multiFactors: ["MULTI_FACTOR_TYPE_U2F_WITH_VERIFICATION"],
    },
    invalid: [
      { settings: { allowUsernamePassword: false, allowExternalIdp: false, passkeysAllowed: false }, reason: "Errors.Settings.Login.NoLoginMethod" },
      { settings: { allowUsernamePassword: true, passwordCheckLifetime: "-1s" }, reason: "Errors.Settings.Login.LifetimeInvalid" },
      { settings: { allowUsernamePassword: true, multiFactorCheckLifetime: "1.5s" }, reason: "Errors.Settings.Login.LifetimeInvalid" },
      { settings: { allowUsernamePassword: true, secondFactorCheckLifetime: "315360001s" }, reason: "Errors.Settings.Login.LifetimeInvalid" },
    ],
  },
  {
    path: "security",
    rpc: "Security",
    defaults: { embeddedIframe: {} },
    instanceValue: { allowedCorsOrigins: ["https://app.example.com"], embeddedIframe: { enabled: true, allowedOrigins: ["https://portal.example.com:8443"] } },
    orgValue: { allowedCorsOrigins: ["http://localhost:3000", "https://b.example.com"], embeddedIframe: { enabled: false, allowedOrigins: [] } },
    invalid: [
      { settings: { allowedCorsOrigins: ["https://example.com/path"] }, reason: "Errors.Settings.Security.OriginInvalid" },
      { settings: { allowedCorsOrigins: ["*"] }, reason: "Errors.Settings.Security.OriginInvalid" },
      { settings: { embeddedIframe: { enabled: true, allowedOrigins: ["ftp://files.example.com"] } }, reason: "Errors.Settings.Security.OriginInvalid" },
    ],
  },
  {
    path: "branding",
    rpc: "Branding",
    defaults: {
      primaryColor: "#2f6feb",
      backgroundColor: "#ffffff",
      warnColor: "#d93025",
      fontColor: "#1f2328",
      themeMode: "THEME_MODE_AUTO",
      darkPrimaryColor: "#6ea8fe",
      darkBackgroundColor: "#0d1117",
      darkWarnColor: "#ff7b72",
      darkFontColor: "#e6edf3",
    },
    instanceValue: {
      primaryColor: "#112233",
      backgroundColor: "#fafafa",
      warnColor: "#ff0000",
      fontColor: "#000000",
      logoUrl: "https://cdn.example.com/logo.svg",
      hideLoginNameSuffix: true,
      disableWatermark: false,
      themeMode: "THEME_MODE_DARK",
      darkPrimaryColor: "#99ccff",
      darkBackgroundColor: "#101010",
      darkWarnColor: "#ff9999",
      darkFontColor: "#f0f0f0",
      darkLogoUrl: "https://cdn.example.com/logo-dark.svg",
    },
    orgValue: {
      primaryColor: "#abcdef",
      backgroundColor: "#000000",
      warnColor: "#ff8800",
      fontColor: "#ffffff",
      logoUrl: "",
      hideLoginNameSuffix: false,
      disableWatermark: true,
      themeMode: "THEME_MODE_LIGHT",
      darkPrimaryColor: "#6ea8fe",
      darkBackgroundColor: "#0d1117",
      darkWarnColor: "#ff7b72",
      darkFontColor: "#e6edf3",
      darkLogoUrl: "",
    },
    invalid: [
      {
        settings: { primaryColor: "blue", backgroundColor: "#ffffff", warnColor: "#ff0000", fontColor: "#000000" },
        reason: "Errors.Settings.Branding.ColorInvalid",
      },
      { settings: { primaryColor: "#ffffff", backgroundColor: "#ffffff", warnColor: "#ff0000" }, reason: "Errors.Settings.Branding.ColorInvalid" },
      {
        settings: {
          primaryColor: "#ffffff",
          backgroundColor: "#ffffff",
          warnColor: "#ff0000",
          fontColor: "#000000",
          logoUrl: "http://cdn.example.com/logo.svg",
        },
        reason: "Errors.Settings.Branding.LogoUrlInvalid",
      },
      {
        settings: { primaryColor: "#ffffff", backgroundColor: "#ffffff", warnColor: "#ff0000", fontColor: "#000000", darkFontColor: "white" },
        reason: "Errors.Settings.Branding.ColorInvalid",
      },
      {
        settings: { primaryColor: "#ffffff", backgroundColor: "#ffffff", warnColor: "#ff0000", fontColor: "#000000", darkLogoUrl: "javascript:alert(1)" },
        reason: "Errors.Settings.Branding.LogoUrlInvalid",
      },
    ],
  },
  {
    path: "domain",
    rpc: "Domain",
    defaults: { loginNameIncludesDomain: true },
    instanceValue: { loginNameIncludesDomain: false, smtpSenderAddressMatchesInstanceDomain: true },
    orgValue: { loginNameIncludesDomain: true, smtpSenderAddressMatchesInstanceDomain: false },
    invalid: [],
  },
  {
    path: "language",
    rpc: "Language",
    // supportedLanguages is output only: ignored when set, always returned.
    defaults: { defaultLanguage: "en", supportedLanguages: ["en", "de"] },
    instanceValue: { defaultLanguage: "de", supportedLanguages: ["en", "de"] },
    orgValue: { defaultLanguage: "en", supportedLanguages: ["en", "de"] },
    invalid: [
      { settings: { defaultLanguage: "fr" }, reason: "Errors.Settings.Language.Unsupported" },
      { settings: { defaultLanguage: "" }, reason: "Errors.Settings.Language.Unsupported" },
    ],
  },
];
const kind = (rpc: string) => KINDS.find((k) => k.rpc === rpc) as Kind;

beforeAll(async () => {
  t = await startTestServer();
  const res = await rest(t.url, t.pat, "GET", "/v2/instance");
  orgA = ((await res.json()) as { instance: { defaultOrganizationId: string } }).instance.defaultOrganizationId;
  // No CreateOrganization yet: a second organization is inserted directly (setup only).
  orgB = (
    await t.server.db.prisma.organization.create({ data: { id: "org-b", instanceId: t.server.instanceId, name: "Org B", primaryDomain: "org-b.localhost" } })
  ).id;
});
afterAll(() => t.stop());

describe("built-in defaults", () => {
  for (const transport of ["rest", "connect"] as const) {
    it(`are returned over ${transport} for the instance and for an org without settings`, async () => {
      for (const k of KINDS) {
        for (const req of [{}, { organizationId: orgA }]) {
          const got = await call(transport, t.pat, "Get", k, req);
          expect(got.status).toBe(200);
          expect(got.body).toEqual({ settings: { ...k.defaults, resourceOwnerType: INSTANCE } });
        }
      }
    });
  }
});

describe("instance default → org override → reset", () => {
  for (const transport of ["rest", "connect"] as const) {
    for (const k of KINDS) {
      it(`${k.rpc} over ${transport}`, async () => {
        const set = await call(transport, t.pat, "Set", k, { settings: k.instanceValue });
        expect(set.status).toBe(200);
        const details = set.body.details as { resourceOwner: string; creationDate: string; changeDate: string };
        expect(details.resourceOwner).toBe(t.server.instanceId);
        expect(Date.parse(details.changeDate)).toBeGreaterThanOrEqual(Date.parse(details.creationDate));

        const instanceValue = { settings: { ...emitted(k.instanceValue), resourceOwnerType: INSTANCE } };
        expect((await call(transport, t.pat, "Get", k)).body).toEqual(instanceValue);
        expect((await call(transport, t.pat, "Get", k, { organizationId: orgA })).body).toEqual(instanceValue);

        const override = await call(transport, t.pat, "Set", k, { organizationId: orgA, settings: k.orgValue });
        expect(override.status).toBe(200);
        expect((override.body.details as { resourceOwner: string }).resourceOwner).toBe(orgA);
        expect((await call(transport, t.pat, "Get", k, { organizationId: orgA })).body).toEqual({
          settings: { ...emitted(k.orgValue), resourceOwnerType: ORG },
        });
        // Neither the instance default nor another organization changes.
        expect((await call(transport, t.pat, "Get", k)).body).toEqual(instanceValue);
        expect((await call(transport, t.pat, "Get", k, { organizationId: orgB })).body).toEqual(instanceValue);

        const reset = await call(transport, t.pat, "Reset", k, { organizationId: orgA });
        expect(reset.status).toBe(200);
        expect((reset.body.details as { resourceOwner: string }).resourceOwner).toBe(orgA);
        expect((await call(transport, t.pat, "Get", k, { organizationId: orgA })).body).toEqual(instanceValue);
        const again = await call(transport, t.pat, "Reset", k, { organizationId: orgA });
        expect(again.status).toBe(404);
        expect(again.reason).toBe("Errors.Settings.NotFound");
      });
    }
  }

  it("a second Set changes only what it names and keeps the creation date", async () => {
    const k = kind("Lockout");
    const first = await call("rest", t.pat, "Set", k, { organizationId: orgB, settings: { maxPasswordAttempts: "4", maxOtpAttempts: "4" } });
    const second = await call("rest", t.pat, "Set", k, { organizationId: orgB, settings: { maxOtpAttempts: "2" } }, true);
    const d1 = first.body.details as { creationDate: string };
    const d2 = second.body.details as { creationDate: string; changeDate: string };
    expect(d2.creationDate).toBe(d1.creationDate);
    expect((await call("rest", t.pat, "Get", k, { organizationId: orgB })).body).toEqual({
      settings: { maxPasswordAttempts: "4", maxOtpAttempts: "2", lockoutDurationSeconds: "300", maxLockoutDurationSeconds: "3600", resourceOwnerType: ORG },
    });
    expect((await call("rest", t.pat, "Reset", k, { organizationId: orgB })).status).toBe(200);
  });

  it("login lifetimes left out take their built-in defaults, and factors left out are all allowed", async () => {
    const k = kind("Login");
    expect(
      (await call("rest", t.pat, "Set", k, { organizationId: orgB, settings: { allowUsernamePassword: true, secondFactorCheckLifetime: "5s" } })).status,
    ).toBe(200);
    const got = (await call("rest", t.pat, "Get", k, { organizationId: orgB })).body.settings as Json;
    expect(got).toEqual({
      allowUsernamePassword: true,
      passwordCheckLifetime: "864000s",
      externalLoginCheckLifetime: "864000s",
      mfaInitSkipLifetime: "2592000s",
      secondFactorCheckLifetime: "5s",
      multiFactorCheckLifetime: "43200s",
      secondFactors: ["SECOND_FACTOR_TYPE_OTP", "SECOND_FACTOR_TYPE_U2F", "SECOND_FACTOR_TYPE_OTP_EMAIL"],
      multiFactors: ["MULTI_FACTOR_TYPE_U2F_WITH_VERIFICATION"],
      resourceOwnerType: ORG,
    });
    expect((await call("rest", t.pat, "Reset", k, { organizationId: orgB })).status).toBe(200);
  });

  it("origins and colours are stored normalized", async () => {
    const sec = kind("Security");
    const settings = { allowedCorsOrigins: ["https://App.Example.com", "https://app.example.com:443"], embeddedIframe: { enabled: true } };
    expect((await call("rest", t.pat, "Set", sec, { organizationId: orgB, settings })).status).toBe(200);
    expect(((await call("rest", t.pat, "Get", sec, { organizationId: orgB })).body.settings as Json).allowedCorsOrigins).toEqual(["https://app.example.com"]);
    expect((await call("rest", t.pat, "Reset", sec, { organizationId: orgB })).status).toBe(200);
    const br = kind("Branding");
    const colours = { primaryColor: "#ABCDEF", backgroundColor: "#FFFFFF", warnColor: "#FF0000", fontColor: "#000000" };
    expect((await call("rest", t.pat, "Set", br, { organizationId: orgB, settings: colours })).status).toBe(200);
    expect(((await call("rest", t.pat, "Get", br, { organizationId: orgB })).body.settings as Json).primaryColor).toBe("#abcdef");
    expect((await call("rest", t.pat, "Reset", br, { organizationId: orgB })).status).toBe(200);
  });
});

describe("partial updates (AIP-134): a Set changes the fields it names, the others keep their value", () => {
  const settingsOf = async (k: Kind, organizationId?: string) =>
    (await call("rest", t.pat, "Get", k, organizationId ? { organizationId } : {})).body.settings as Json;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  /** A field of the kind's org value that differs from `current` (both as proto3 JSON emits them). */
  const differing = (k: Kind, current: Json, skip: string[] = []) =>
    Object.keys(k.orgValue).find((key) => !skip.includes(key) && !same(emitted(k.orgValue)[key], current[key]));

  for (const k of KINDS) {
    it(`${k.rpc}: REST names fields by the JSON body's keys (zero values too); an organization starts from the value in force`, async () => {
      await call("rest", t.pat, "Reset", k, { organizationId: orgB });
      const inForce = await settingsOf(k, orgB);
      const first = differing(k, inForce) as string;
      expect(first).toBeDefined();
      const set = await call("rest", t.pat, "Set", k, { organizationId: orgB, settings: { [first]: k.orgValue[first] } }, true);
      expect([set.status, set.reason]).toEqual([200, undefined]);
      const afterFirst = emitted({ ...inForce, [first]: k.orgValue[first], resourceOwnerType: ORG });
      expect(await settingsOf(k, orgB)).toEqual(afterFirst);
      // A second partial Set keeps the first one's field.
      const second = differing(k, afterFirst, [first]);
      if (second) {
        expect((await call("rest", t.pat, "Set", k, { organizationId: orgB, settings: { [second]: k.orgValue[second] } }, true)).status).toBe(200);
        expect(await settingsOf(k, orgB)).toEqual(emitted({ ...afterFirst, [second]: k.orgValue[second] }));
      }
      // The instance default did not change.
      expect(await settingsOf(k)).toEqual(emitted({ ...inForce, resourceOwnerType: INSTANCE }));
      expect((await call("rest", t.pat, "Reset", k, { organizationId: orgB })).status).toBe(200);
    });

    it(`${k.rpc}: Connect changes the populated fields, and a zero value only when update_mask names it`, async () => {
      const inForce = await settingsOf(k, orgB);
      const first = differing(k, inForce) as string;
      // Without a mask a zero value is not populated: nothing it names changes (the override is made all the same).
      const zero = Object.keys(inForce).find((key) => key !== "resourceOwnerType" && typeof inForce[key] === "boolean" && inForce[key] === true);
      if (zero) {
        expect((await call("connect", t.pat, "Set", k, { organizationId: orgB, settings: { [zero]: false } }, true)).status).toBe(200);
        expect(await settingsOf(k, orgB)).toEqual({ ...inForce, resourceOwnerType: ORG });
        // Named in update_mask (its JSON form: camelCase paths), it changes.
        expect((await call("connect", t.pat, "Set", k, { organizationId: orgB, settings: { [zero]: false }, updateMask: zero })).status).toBe(200);
        expect(await settingsOf(k, orgB)).toEqual(emitted({ ...inForce, [zero]: false, resourceOwnerType: ORG }));
      }
      expect((await call("connect", t.pat, "Set", k, { organizationId: orgB, settings: k.orgValue, updateMask: first })).status).toBe(200);
      const got = await settingsOf(k, orgB);
      expect(same(got[first], emitted(k.orgValue)[first])).toBe(true);
      expect((await call("rest", t.pat, "Reset", k, { organizationId: orgB })).status).toBe(200);
    });
  }

  it("a nested path changes one field of a sub-message; a path that names no field is refused", async () => {
    const k = kind("Security");
    await call("rest", t.pat, "Set", k, {
      organizationId: orgB,
      settings: { allowedCorsOrigins: ["https://one.example.com"], embeddedIframe: { enabled: false, allowedOrigins: ["https://frame.example.com"] } },
    });
    const set = await call("connect", t.pat, "Set", k, {
      organizationId: orgB,
      settings: { embeddedIframe: { enabled: true } },
      updateMask: "embeddedIframe.enabled",
    });
    expect(set.status).toBe(200);
    expect(await settingsOf(k, orgB)).toEqual({
      allowedCorsOrigins: ["https://one.example.com"],
      embeddedIframe: { enabled: true, allowedOrigins: ["https://frame.example.com"] },
      resourceOwnerType: ORG,
    });
    for (const updateMask of ["noSuchField", "allowedCorsOrigins.x", "*,allowedCorsOrigins"]) {
      for (const transport of ["rest", "connect"] as const) {
        const bad = await call(transport, t.pat, "Set", k, { organizationId: orgB, settings: {}, updateMask });
        expect([updateMask, transport, bad.status, bad.reason]).toEqual([updateMask, transport, 400, "Errors.UpdateMask.Invalid"]);
      }
    }
    expect((await call("rest", t.pat, "Reset", k, { organizationId: orgB })).status).toBe(200);
  });

  it("concurrent partial updates of different fields both take effect", async () => {
    const k = kind("Lockout");
    await call("rest", t.pat, "Set", k, { organizationId: orgB, settings: { maxPasswordAttempts: "10", maxOtpAttempts: "5" } });
    for (let i = 1; i <= 5; i++) {
      const [a, b] = await Promise.all([
        call("connect", t.pat, "Set", k, { organizationId: orgB, settings: { maxPasswordAttempts: String(20 + i) } }, true),
        call("rest", t.pat, "Set", k, { organizationId: orgB, settings: { maxOtpAttempts: String(30 + i) } }, true),
      ]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(await settingsOf(k, orgB)).toMatchObject({ maxPasswordAttempts: String(20 + i), maxOtpAttempts: String(30 + i) });
    }
    expect((await call("rest", t.pat, "Reset", k, { organizationId: orgB })).status).toBe(200);
  });
});

describe("validation", () => {
  for (const transport of ["rest", "connect"] as const) {
    it(`refuses invalid values with a stable reason over ${transport}, at instance and org level`, async () => {
      for (const k of KINDS) {
        const before = (await call(transport, t.pat, "Get", k, { organizationId: orgA })).body;
        for (const bad of k.invalid) {
          for (const org of [{}, { organizationId: orgA }]) {
            const res = await call(transport, t.pat, "Set", k, { ...org, settings: bad.settings });
            expect([k.rpc, res.status, res.reason]).toEqual([k.rpc, 400, bad.reason]);
          }
        }
        // Nothing was stored.
        expect((await call(transport, t.pat, "Get", k, { organizationId: orgA })).body).toEqual(before);
      }
    });

    it(`requires settings in Set and an organization in Reset over ${transport}`, async () => {
      for (const k of KINDS) {
        const set = await call(transport, t.pat, "Set", k, { organizationId: orgA });
        expect([set.status, set.reason]).toEqual([400, "Errors.Settings.Missing"]);
        const reset = await call(transport, t.pat, "Reset", k, {});
        expect([reset.status, reset.reason]).toEqual([400, "Errors.Settings.Org.Missing"]);
      }
    });

    it(`answers NotFound for an unknown organization over ${transport}`, async () => {
      for (const k of KINDS) {
        for (const op of ["Get", "Set", "Reset"] as const) {
          const res = await call(transport, t.pat, op, k, { organizationId: "no-such-org", ...(op === "Set" ? { settings: k.instanceValue } : {}) });
          expect([k.rpc, op, res.status, res.reason]).toEqual([k.rpc, op, 404, "Errors.Org.NotFound"]);
        }
      }
    });
  }

  it("refuses unknown fields and query parameters like every endpoint", async () => {
    const res = await rest(t.url, t.pat, "PUT", "/v2/settings/lockout", { settings: { maxPasswordAttempts: 1, maxAttempts: 2 } });
    expect(res.status).toBe(400);
    expect((await rest(t.url, t.pat, "GET", "/v2/settings/lockout?org=x")).status).toBe(400);
    expect((await rest(t.url, t.pat, "PUT", "/v2/settings/lockout?organizationId=x", { settings: {} })).status).toBe(400);
  });
});

describe("over gRPC", () => {
  const client = () => createClient(SettingsService, createGrpcTransport({ baseUrl: t.url }));
  const headers = () => ({ authorization: `Bearer ${t.pat}` });

  it("sets, gets and resets login settings with Duration lifetimes", async () => {
    const c = client();
    const set = await c.setLoginSettings(
      {
        organizationId: orgB,
        settings: {
          allowUsernamePassword: true,
          passkeysAllowed: true,
          forceMfa: true,
          passwordCheckLifetime: { seconds: 7200n },
          multiFactorCheckLifetime: { seconds: 60n },
        },
      },
      { headers: headers() },
    );
    expect(set.details?.resourceOwner).toBe(orgB);
    const got = await c.getLoginSettings({ organizationId: orgB }, { headers: headers() });
    expect(got.settings?.forceMfa).toBe(true);
    expect(got.settings?.passwordCheckLifetime?.seconds).toBe(7200n);
    expect(got.settings?.multiFactorCheckLifetime?.seconds).toBe(60n);
    // Not named: the value in force for the organization (the instance default set above).
    expect(got.settings?.externalLoginCheckLifetime?.seconds).toBe(7200n);
    expect(got.settings?.resourceOwnerType).toBe(ResourceOwnerType.ORG);
    await c.resetLoginSettings({ organizationId: orgB }, { headers: headers() });
    expect((await c.getLoginSettings({ organizationId: orgB }, { headers: headers() })).settings?.resourceOwnerType).toBe(ResourceOwnerType.INSTANCE);
  });

  it("maps errors to gRPC codes with ErrorInfo", async () => {
    const c = client();
    // A zero value is set only when update_mask names it (proto3 cannot tell it from absent).
    const bad = await c
      .setPasswordComplexitySettings({ settings: { minLength: 0n }, updateMask: { paths: ["min_length"] } }, { headers: headers() })
      .catch((e: unknown) => ConnectError.from(e));
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
    expect((bad as ConnectError).findDetails(ErrorInfoSchema)[0]?.reason).toBe("Errors.Settings.PasswordComplexity.MinLengthInvalid");
    const missing = await c.resetBrandingSettings({ organizationId: orgB }, { headers: headers() }).catch((e: unknown) => ConnectError.from(e));
    expect((missing as ConnectError).code).toBe(Code.NotFound);
    const pc = await c.getPasswordComplexitySettings({ organizationId: orgB }, { headers: headers() });
    expect(pc.settings?.minLength).toBe(10n);
  });
});

describe("password complexity governs CreateUser", () => {
  const human = (organizationId: string, username: string, password: string) => ({
    organizationId,
    username,
    human: { profile: { givenName: "Pat", familyName: "Tester" }, email: { email: `${username}@example.com` }, password: { password } },
  });
  const create = async (org: string, username: string, password: string) => {
    const res = await rest(t.url, t.pat, "POST", "/v2/users/new", human(org, username, password));
    return { status: res.status, reason: errorReason((await res.json()) as Json) };
  };
  const pc = kind("PasswordComplexity");

  it("follows the instance default", async () => {
    // The instance default set above: 10 characters, no symbol needed.
    expect(await create(orgA, "nine", "Abcdefgh1")).toEqual({ status: 400, reason: "Errors.User.Password.Complexity" });
    expect(await create(orgA, "ten", "Abcdefghi1")).toEqual({ status: 200, reason: undefined });
    const strict = { minLength: "16", requiresUppercase: true, requiresLowercase: true, requiresNumber: true, requiresSymbol: true };
    expect((await call("rest", t.pat, "Set", pc, { settings: strict })).status).toBe(200);
    expect(await create(orgA, "sixteen-weak", "Abcdefghijklmno1")).toEqual({ status: 400, reason: "Errors.User.Password.Complexity" });
    expect(await create(orgA, "sixteen", "Abcdefghijklmn1!")).toEqual({ status: 200, reason: undefined });
  });

  it("follows an organization's override, and the instance default again after reset", async () => {
    const relaxed = { minLength: "6", requiresLowercase: true };
    expect((await call("rest", t.pat, "Set", pc, { organizationId: orgB, settings: relaxed })).status).toBe(200);
    expect(await create(orgB, "b-relaxed", "abcdef")).toEqual({ status: 200, reason: undefined });
    // Org A still has the strict instance default.
    expect(await create(orgA, "a-relaxed", "abcdef")).toEqual({ status: 400, reason: "Errors.User.Password.Complexity" });
    expect((await call("rest", t.pat, "Reset", pc, { organizationId: orgB })).status).toBe(200);
    expect(await create(orgB, "b-after-reset", "abcdef")).toEqual({ status: 400, reason: "Errors.User.Password.Complexity" });
  });
});

describe("audit events of settings writes", () => {
  it("records set and reset with the value, the owner and the editor", async () => {
    const k = kind("Lockout");
    // From now on: a look-back would also catch the Lockout writes of the tests just before (they run within a second).
    const since = new Date().toISOString();
    expect((await call("rest", t.pat, "Set", k, { organizationId: orgB, settings: { maxPasswordAttempts: "7" } })).status).toBe(200);
    expect((await call("rest", t.pat, "Reset", k, { organizationId: orgB })).status).toBe(200);
    expect((await call("rest", t.pat, "Set", k, { settings: { maxOtpAttempts: "9" } })).status).toBe(200);
    const res = await rest(t.url, t.pat, "POST", "/v2/events", {
      aggregateType: "settings",
      eventTypes: ["settings.lockout.set", "settings.lockout.reset"],
      from: since,
      query: { asc: true },
    });
    expect(res.status).toBe(200);
    const events = ((await res.json()) as { result: Json[] }).result;
    const editor = await t.server.db.prisma.user.findFirstOrThrow({ where: { username: "svc-admin" } });
    expect(events.map((e) => [e.type, e.aggregateId, e.organizationId ?? ""])).toEqual([
      ["settings.lockout.set", orgB, orgB],
      ["settings.lockout.reset", orgB, orgB],
      ["settings.lockout.set", t.server.instanceId, ""],
    ]);
    expect(events.every((e) => e.editorUserId === editor.id)).toBe(true);
    const durations = { permanentLockout: false, lockoutDurationSeconds: 300, maxLockoutDurationSeconds: 3600 };
    expect(events[0]?.payload).toEqual({ maxPasswordAttempts: 7, maxOtpAttempts: 0, ...durations });
    expect(events[2]?.payload).toEqual({ maxPasswordAttempts: 0, maxOtpAttempts: 9, ...durations });
  });

  it("writes nothing when a Set is refused", async () => {
    const before = await t.server.db.prisma.event.count();
    const setting = await t.server.db.prisma.setting.count();
    expect((await call("rest", t.pat, "Set", kind("Lockout"), { settings: { maxPasswordAttempts: "5000" } })).status).toBe(400);
    expect(await t.server.db.prisma.event.count()).toBe(before);
    expect(await t.server.db.prisma.setting.count()).toBe(setting);
  });
});
