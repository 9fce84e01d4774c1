// SAML SOAP logout endpoints at private addresses (SSRF, issue 29): an SP's SOAP SingleLogoutService comes from metadata
// an ORG_OWNER registers, so svc POSTs to it only at a public address unless SVC_ACTIONS_ALLOW_PRIVATE=true (as the
// OIDC back-channel logout URIs and the action targets). Without it, a loopback endpoint (allowed in metadata for SPs
// under development) is never connected to: the delivery fails with the reason. saml-soap-logout.test.ts runs with
// private addresses allowed.

import type { AddressInfo } from "node:net";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { loginClient, signIn, visit } from "../support/oidc.js";
import { admin, ok } from "../support/rpc.js";
import { createResponse, nodeSamlSp, samlApp, samlRequestOf, spKeyPair, spMetadata } from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

const SOAP = "urn:oasis:names:tc:SAML:2.0:bindings:SOAP";

let t: TestServer;
let login: Machine;
let projectId: string;
let loginName: string;

beforeAll(async () => {
  t = await startTestServer({ SVC_ACTIONS_DELIVERY_BACKOFF_MS: "200" });
  const orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "soap-ssrf-login-ui");
  projectId = await project(t, orgId, "SOAP SSRF");
  await createHuman(t, orgId, "soap-ssrf-user");
  loginName = `soap-ssrf-user@${(await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain}`;
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

describe("SOAP logout endpoints at private addresses", () => {
  it("a loopback SOAP SingleLogoutService is never called without SVC_ACTIONS_ALLOW_PRIVATE: the delivery fails with the reason", async () => {
    let connections = 0;
    const listener = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    try {
      const port = (listener.address() as AddressInfo).port;
      const sps = ["127.0.0.1", "localhost"].map((host, i) => ({
        entity: `https://soap-ssrf-${i}.example.com/sp`,
        acs: `https://soap-ssrf-${i}.example.com/acs`,
        soap: `http://${host}:${port}/soap`,
      }));
      const appIds: string[] = [];
      for (const [i, sp] of sps.entries()) {
        const metadata = spMetadata({ entityId: sp.entity, acs: [{ url: sp.acs }], cert: spKeyPair(`ssrf-${i}`), slo: [{ url: sp.soap, binding: SOAP }] });
        appIds.push(await samlApp(t, projectId, `soap-ssrf-${i}`, metadata));
      }
      const session = await signIn(t, login, loginName);
      for (const sp of sps) {
        const node = await nodeSamlSp(t, sp.entity, sp.acs);
        await createResponse(t, login, samlRequestOf(await visit(t, await node.getAuthorizeUrlAsync("", undefined, {}))), session);
      }
      await ok(t, "rest", login.pat, "DeleteSession", { sessionId: session.sessionId, sessionToken: session.sessionToken });
      const end = Date.now() + 30_000;
      let rows: { lastError: string | null; state: string }[] = [];
      while (Date.now() < end) {
        rows = await t.server.db.prisma.delivery.findMany({
          where: { kind: "saml.soap_logout", targetId: { in: appIds } },
          select: { lastError: true, state: true },
        });
        if (rows.length === sps.length && rows.every((r) => r.lastError !== null)) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(rows).toHaveLength(sps.length);
      for (const r of rows) {
        expect(r.lastError).toMatch(/private|loopback/);
        expect(r.state).not.toBe("delivered");
      }
      expect(connections).toBe(0);
    } finally {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  }, 60_000);
});
