// Phone verification by code (svc sends no SMS): SendPhoneCode returns a code for the user's number to an
// administrator with user.authn.write on the user (never to the user itself, never to a read-only role), VerifyPhone
// with it marks the number verified once; the code verifies only the number it was made for; events in the log.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { admin, fails, ok, VIAS } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { type Caller, humanToken, PASSWORD, userCallers } from "../support/users.js";

let t: TestServer;
let orgId: string;
let auditor: Caller;
let manager: Caller;
let foreignManager: Caller;

beforeAll(async () => {
  t = await startTestServer();
  ({ orgId, auditor, manager, foreignManager } = await userCallers(t));
});
afterAll(() => t.stop());

async function personWithPhone(username: string, phone: string | undefined): Promise<string> {
  const { id } = await admin(t, "CreateUser", {
    organizationId: orgId,
    username,
    human: {
      profile: { givenName: "Phone", familyName: "Owner" },
      email: { email: `${username}@example.com` },
      password: { password: PASSWORD },
      ...(phone ? { phone: { phone } } : {}),
    },
  });
  return id;
}

const phoneOf = async (userId: string) => (await admin(t, "GetUserByID", { userId })).user.human.phone;

describe("phone verification by code", () => {
  it.each(VIAS)("returns a code to a user manager; VerifyPhone with it verifies the number once (%s)", async (via) => {
    const id = await personWithPhone(`phone-${via}`, "+41441234567");
    expect(await phoneOf(id)).toEqual({ phone: "+41441234567" });
    const sent = await ok(t, via, manager.pat, "SendPhoneCode", { userId: id });
    expect(sent.verificationCode).toMatch(/^[2-9A-HJKMNP-Z]{8}$/);
    const token = await humanToken(t, id);
    await fails(t, via, token, "VerifyPhone", { userId: id, verificationCode: "WRONG234" }, "invalid_argument", "Errors.User.Code.Invalid");
    expect(await phoneOf(id)).toEqual({ phone: "+41441234567" });
    // The user types it in (lower case is the same code).
    await ok(t, via, token, "VerifyPhone", { userId: id, verificationCode: sent.verificationCode.toLowerCase() });
    expect(await phoneOf(id)).toEqual({ phone: "+41441234567", isVerified: true });
    await fails(t, via, token, "VerifyPhone", { userId: id, verificationCode: sent.verificationCode }, "failed_precondition", "Errors.User.Code.NotFound");
    await fails(t, via, manager.pat, "SendPhoneCode", { userId: id }, "failed_precondition", "Errors.User.Phone.AlreadyVerified");
    const events = await t.server.db.prisma.event.findMany({ where: { aggregateId: id, type: { startsWith: "user.phone" } }, orderBy: { createdAt: "asc" } });
    expect(events.map((e) => e.type)).toEqual(["user.phone.code.added", "user.phone.verified"]);
    expect(JSON.stringify(events)).not.toContain(sent.verificationCode);
  });

  it("verifies nothing once the number changed after the code was made", async () => {
    const id = await personWithPhone("phone-changed", "+41441234567");
    const { verificationCode } = await admin(t, "SendPhoneCode", { userId: id });
    await admin(t, "UpdateUser", { userId: id, human: { phone: { phone: "+41449999999" } } });
    await fails(t, "rest", t.pat, "VerifyPhone", { userId: id, verificationCode }, "failed_precondition", "Errors.User.Phone.Changed");
    expect(await phoneOf(id)).toEqual({ phone: "+41449999999" });
    // A code for the new number verifies it.
    const again = await admin(t, "SendPhoneCode", { userId: id });
    await admin(t, "VerifyPhone", { userId: id, verificationCode: again.verificationCode });
    expect(await phoneOf(id)).toEqual({ phone: "+41449999999", isVerified: true });
  });

  it("refuses a user without a phone, the user itself, a read-only role and another organization's manager", async () => {
    const none = await personWithPhone("phone-none", undefined);
    await fails(t, "rest", t.pat, "SendPhoneCode", { userId: none }, "failed_precondition", "Errors.User.Phone.Missing");
    const id = await personWithPhone("phone-refused", "+41441234567");
    const self = await humanToken(t, id);
    await fails(t, "connect", self, "SendPhoneCode", { userId: id }, "permission_denied", "Errors.User.Code.ReturnDenied");
    await fails(t, "connect", auditor.pat, "SendPhoneCode", { userId: id }, "permission_denied");
    await fails(t, "connect", foreignManager.pat, "SendPhoneCode", { userId: id }, "not_found");
    await fails(t, "connect", t.pat, "VerifyPhone", { userId: id, verificationCode: "" }, "invalid_argument", "Errors.User.Code.Missing");
    expect(await phoneOf(id)).toEqual({ phone: "+41441234567" });
  });
});
