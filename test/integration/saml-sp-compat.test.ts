// Independent service providers accept svc's Responses: pysaml2 (Debian's python3, the strictest SP here: exactly one
// AuthnStatement, signed Response and Assertion, InResponseTo of a request it made, audience, Destination/Recipient)
// and node-saml over an ACS with the HTTP-Redirect binding (the query signed). The certificate rotation keeps both
// certificates in the metadata during the overlap.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHuman, defaultOrgId, type Machine, project } from "../support/fixtures.js";
import { loginClient, signIn, visit } from "../support/oidc.js";
import { admin } from "../support/rpc.js";
import {
  createResponse,
  nodeSamlSp,
  pysaml2Request,
  pysaml2Response,
  REDIRECT,
  samlApp,
  samlRequestOf,
  samlTempFile,
  spMetadata,
  xsdValid,
} from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let login: Machine;
let alice: string;
let aliceId: string;
let projectId: string;

beforeAll(async () => {
  t = await startTestServer({ SVC_SAML_CERTIFICATE_ROTATION: "3600", SVC_SAML_CERTIFICATE_OVERLAP: "600" });
  const orgId = await defaultOrgId(t);
  login = await loginClient(t, orgId, "compat-login-ui");
  projectId = await project(t, orgId, "Compat", ["reader"]);
  aliceId = await createHuman(t, orgId, "compat-alice");
  const domain = (await admin(t, "GetOrganizationByID", { organizationId: orgId })).organization.primaryDomain;
  alice = `compat-alice@${domain}`;
}, 120_000);
afterAll(() => t?.stop());

const metadataFile = async () => samlTempFile("idp-metadata.xml", await (await fetch(`${t.url}/saml/v2/metadata`)).text());

describe("pysaml2", () => {
  it("accepts the signed Response and Assertion to its own AuthnRequest (HTTP-Redirect)", async () => {
    await samlApp(t, projectId, "pysaml2", spMetadata({ entityId: "https://pysaml2.example.com/sp", acs: [{ url: "https://pysaml2.example.com/acs" }] }), {
      signResponse: true,
      nameIdFormat: "SAML_NAME_ID_FORMAT_PERSISTENT",
    });
    const md = await metadataFile();
    const request = await pysaml2Request(md);
    const id = samlRequestOf(await visit(t, request.url));
    const answer = await createResponse(t, login, id, await signIn(t, login, alice));
    const read = await pysaml2Response(md, request.id, answer.post.samlResponse);
    expect(read).toMatchObject({
      nameId: aliceId,
      format: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
      inResponseTo: request.id,
      attributes: { UserName: ["compat-alice"], Email: ["compat-alice@example.com"] },
    });
    // A Response to another request id is refused by pysaml2.
    await expect(pysaml2Response(md, "_another", answer.post.samlResponse)).rejects.toThrow();
  });
});

describe("an ACS with the HTTP-Redirect binding", () => {
  // node-saml reads Responses only from a POST (the Web SSO profile, §4.1.2, has no Redirect binding for them): the
  // query signature is checked here with the IdP certificate over the octets as sent, the Response itself by node-saml.
  it("gets a deflated Response in the query, the query signed with the IdP certificate, the assertion valid", async () => {
    const entityId = "https://redirect-acs.example.com/sp";
    const acs = "https://redirect-acs.example.com/acs";
    await samlApp(t, projectId, "redirect-acs", spMetadata({ entityId, acs: [{ url: acs, binding: REDIRECT }] }));
    const sp = await nodeSamlSp(t, entityId, acs, { validateInResponseTo: "never" as never });
    const authorize = new URL((await sp.getAuthorizeUrlAsync("", undefined, {})).replace("http://localhost:0", t.url));
    // node-saml always asks for HTTP-POST: without an AssertionConsumerServiceURL the registered default applies.
    const { inflateRawSync, deflateRawSync } = await import("node:zlib");
    const xml = inflateRawSync(Buffer.from(authorize.searchParams.get("SAMLRequest") as string, "base64"))
      .toString()
      .replace(/ ProtocolBinding="[^"]*"/, "")
      .replace(/ AssertionConsumerServiceURL="[^"]*"/, "");
    authorize.searchParams.set("SAMLRequest", deflateRawSync(xml).toString("base64"));
    authorize.searchParams.set("RelayState", "back-here");
    const id = samlRequestOf(await fetch(authorize, { redirect: "manual" }));
    const answer = await createResponse(t, login, id, await signIn(t, login, alice));
    expect(answer.redirect).toEqual({});
    const url = new URL(answer.url);
    expect(url.origin + url.pathname).toBe(acs);
    expect(url.searchParams.get("RelayState")).toBe("back-here");
    const query = Object.fromEntries(url.searchParams);
    expect(query.SigAlg).toBe("http://www.w3.org/2001/04/xmldsig-more#rsa-sha256");
    const octets = url.search.slice(1).replace(/&Signature=.*$/, "");
    const { createVerify } = await import("node:crypto");
    const cert = await (await fetch(`${t.url}/saml/v2/certificate`)).text();
    expect(
      createVerify("sha256")
        .update(octets)
        .verify(cert, query.Signature as string, "base64"),
    ).toBe(true);
    expect(
      createVerify("sha256")
        .update(octets.replace("back-here", "elsewhere"))
        .verify(cert, query.Signature as string, "base64"),
    ).toBe(false);
    const response = inflateRawSync(Buffer.from(query.SAMLResponse as string, "base64")).toString();
    const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: Buffer.from(response).toString("base64") });
    expect(profile?.nameID).toBe("compat-alice@example.com");
    expect(await xsdValid(response, "protocol")).toMatchObject({ ok: true });
  });
});

describe("certificate rotation", () => {
  it("lists the new and the previous certificate during the overlap, the new one (the signing one) first", async () => {
    const before = await (await fetch(`${t.url}/saml/v2/certificate`)).text();
    t.advanceClock(3_700_000);
    // A rotation is due: the next use of the certificate makes a new one.
    const after = await (await fetch(`${t.url}/saml/v2/certificate`)).text();
    expect(after).not.toBe(before);
    const metadata = await (await fetch(`${t.url}/saml/v2/metadata`)).text();
    const b64 = (pem: string) => pem.replace(/-----[A-Z ]+-----|\s/g, "");
    expect(metadata).toContain(b64(before));
    expect(metadata).toContain(b64(after));
    expect(metadata.indexOf(b64(after))).toBeLessThan(metadata.indexOf(b64(before)));
  });
});
