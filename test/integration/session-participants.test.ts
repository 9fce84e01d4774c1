// A session's participants (issue 29): the OIDC clients it got a code for (with the sid of their ID tokens) and the
// SAML SPs it got an assertion for (with the NameID and SessionIndex given), written with the code or assertion,
// refreshed on the next sign-in to the same app, gone with the session.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { codeFlow, discover, loginClient, oidcApp, signIn, visit } from "../support/oidc.js";
import { admin, ok } from "../support/rpc.js";
import { createResponse, nodeSamlSp, samlApp, samlRequestOf, spMetadata } from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let login: Machine;
let projectId: string;
let alice: string;
let aliceId: string;
const db = () => t.server.db.prisma;

beforeAll(async () => {
  t = await startTestServer();
  const orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "participants-login-ui");
  projectId = await project(t, orgId, "Participants");
  aliceId = await createHuman(t, orgId, "part-alice");
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  alice = `part-alice@${domain}`;
}, 120_000);
afterAll(() => t?.stop());

describe("session participants", () => {
  it("records the OIDC client (sid) and the SAML SP (NameID, SessionIndex) the session signed into, and drops them with it", async () => {
    const rp = await oidcApp(t, projectId, "participant-rp");
    const config = await discover(t, rp.clientId, rp.clientSecret);
    const flow = await codeFlow(t, config, login, alice);
    const sid = flow.tokens.claims()?.sid;
    expect(sid).toBe(flow.session.sessionId);

    const entityId = "https://participant-sp.example.com/sp";
    const acs = "https://participant-sp.example.com/acs";
    const spAppId = await samlApp(t, projectId, "participant-sp", spMetadata({ entityId, acs: [{ url: acs }] }));
    const sp = await nodeSamlSp(t, entityId, acs, { validateInResponseTo: "never" as never });
    const samlRequestId = samlRequestOf(await visit(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    const answer = await createResponse(t, login, samlRequestId, flow.session);
    const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: answer.post.samlResponse });

    const rows = await db().sessionParticipant.findMany({ where: { sessionId: flow.session.sessionId }, orderBy: { firstAt: "asc" } });
    expect(rows.map((r) => [r.appId, r.protocol])).toEqual(
      expect.arrayContaining([
        [rp.appId, "oidc"],
        [spAppId, "saml"],
      ]),
    );
    const oidcRow = rows.find((r) => r.protocol === "oidc");
    expect(oidcRow).toMatchObject({ sid: sid, nameId: null });
    const samlRow = rows.find((r) => r.protocol === "saml");
    expect(samlRow).toMatchObject({ nameId: profile?.nameID, nameIdFormat: profile?.nameIDFormat, sessionIndex: profile?.sessionIndex });
    expect(profile?.nameID).toContain("part-alice");

    // A second code for the same client refreshes the row (one row per session and app).
    const again = await codeFlow(t, config, login, alice, { session: flow.session });
    expect(again.tokens.claims()?.sid).toBe(sid);
    const refreshed = await db().sessionParticipant.findMany({ where: { sessionId: flow.session.sessionId, appId: rp.appId } });
    expect(refreshed).toHaveLength(1);
    expect(refreshed[0]?.lastAt.getTime()).toBeGreaterThanOrEqual(oidcRow?.lastAt.getTime() ?? 0);
    expect(refreshed[0]?.firstAt).toEqual(oidcRow?.firstAt);

    await ok(t, "rest", login.pat, "DeleteSession", { sessionId: flow.session.sessionId, sessionToken: flow.session.sessionToken });
    expect(await db().sessionParticipant.count({ where: { sessionId: flow.session.sessionId } })).toBe(0);
    expect(aliceId).toBeTruthy();
  });

  it("records nothing for an error answer", async () => {
    const entityId = "https://participant-denied.example.com/sp";
    const acs = "https://participant-denied.example.com/acs";
    await samlApp(t, projectId, "participant-denied", spMetadata({ entityId, acs: [{ url: acs }] }));
    const sp = await nodeSamlSp(t, entityId, acs, { validateInResponseTo: "never" as never });
    const samlRequestId = samlRequestOf(await visit(t, await sp.getAuthorizeUrlAsync("", undefined, {})));
    const session = await signIn(t, login, alice);
    await ok(t, "rest", login.pat, "CreateResponse", { samlRequestId, error: { error: "ERROR_REASON_AUTHN_FAILED" } });
    expect(await db().sessionParticipant.count({ where: { sessionId: session.sessionId } })).toBe(0);
  });
});
