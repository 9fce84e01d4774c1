// The SAML identity provider's metadata and certificate, and SAML applications in svc.app.v2: the metadata is valid
// against the OASIS schema and lists the certificate /saml/v2/certificate serves (the same on every start), and a SAML
// app is registered from the SP's metadata (entity ids unique per instance, hostile metadata refused).
import { X509Certificate } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { defaultOrgId, machine, project } from "../support/fixtures.js";
import { admin, call, type Json } from "../support/rpc.js";
import { idpCertificate, idpEntityId, POST, REDIRECT, samlApp, spKeyPair, spMetadata, ssoUrl, xsdValid } from "../support/saml.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let projectId: string;

beforeAll(async () => {
  // The metadata URL tests serve metadata on loopback over http.
  t = await startTestServer({ SVC_SAML_METADATA_ALLOW_PRIVATE: "true" });
  const orgId = await defaultOrgId(t);
  projectId = await project(t, orgId, "SAML Apps", ["reader", "writer"]);
}, 120_000);
afterAll(() => t?.stop());

describe("GET /saml/v2/metadata and /saml/v2/certificate", () => {
  it("serves IdP metadata valid against saml-schema-metadata-2.0.xsd, with the signing certificate and both SSO bindings", async () => {
    const res = await fetch(`${t.url}/saml/v2/metadata`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/samlmetadata\+xml/);
    const xml = await res.text();
    const valid = await xsdValid(xml, "metadata");
    expect(valid).toEqual({ ok: true, output: expect.stringContaining("validates") });
    expect(xml).toContain(`entityID="${idpEntityId(t)}"`);
    expect(xml).toContain('protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"');
    expect(xml).toContain('WantAuthnRequestsSigned="false"');
    expect(xml).toContain(`<md:SingleSignOnService Binding="${REDIRECT}" Location="${ssoUrl(t)}"/>`);
    expect(xml).toContain(`<md:SingleSignOnService Binding="${POST}" Location="${ssoUrl(t)}"/>`);
    for (const f of ["1.1:nameid-format:emailAddress", "2.0:nameid-format:persistent", "1.1:nameid-format:unspecified"]) {
      expect(xml).toContain(`<md:NameIDFormat>urn:oasis:names:tc:SAML:${f}</md:NameIDFormat>`);
    }
    const pem = await idpCertificate(t);
    const cert = new X509Certificate(pem);
    expect(xml).toContain(cert.raw.toString("base64"));
    expect(cert.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(cert.verify(cert.publicKey)).toBe(true);
  });

  it("is refused with 405 for other methods", async () => {
    expect((await fetch(`${t.url}/saml/v2/metadata`, { method: "POST" })).status).toBe(405);
  });
});

describe("SAML applications", () => {
  const entityId = "https://sp-one.example.com/metadata";

  it("are created from the SP's metadata and read back with what svc took from it", async () => {
    const cert = spKeyPair();
    const metadata = spMetadata({
      entityId,
      cert,
      authnRequestsSigned: true,
      acs: [
        { url: "https://sp-one.example.com/acs/post", binding: POST, index: 1, isDefault: true },
        { url: "https://sp-one.example.com/acs/redirect", binding: REDIRECT, index: 2 },
        { url: "https://sp-one.example.com/acs/artifact", binding: "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Artifact", index: 3 },
      ],
    });
    const appId = await samlApp(t, projectId, "sp-one", metadata, { nameIdFormat: "SAML_NAME_ID_FORMAT_PERSISTENT", roleKeys: ["reader"] });
    const { app } = await admin(t, "GetApplication", { projectId, appId });
    expect(app.saml).toMatchObject({
      entityId,
      nameIdFormat: "SAML_NAME_ID_FORMAT_PERSISTENT",
      roleKeys: ["reader"],
      assertionLifetimeSeconds: 300,
      authnRequestsSigned: true,
      assertionConsumerServices: [
        { url: "https://sp-one.example.com/acs/post", binding: POST, index: 1, isDefault: true },
        { url: "https://sp-one.example.com/acs/redirect", binding: REDIRECT, index: 2 },
      ],
    });
    expect(Buffer.from(app.saml.metadataXml, "base64").toString()).toBe(metadata);
    const list = await admin(t, "ListApplications", { projectId });
    expect(list.result.map((a: Json) => a.saml?.entityId).filter(Boolean)).toContain(entityId);
    await admin(t, "UpdateApplication", { projectId, appId, saml: { metadataXml: Buffer.from(metadata).toString("base64"), signResponse: true } });
    const after = (await admin(t, "GetApplication", { projectId, appId })).app;
    expect(after.saml).toMatchObject({ signResponse: true, nameIdFormat: "SAML_NAME_ID_FORMAT_EMAIL_ADDRESS", assertionLifetimeSeconds: 300 });
  });

  it("refuse a second application with the same entity id", async () => {
    const r = await call(t, "rest", t.pat, "CreateApplication", {
      projectId,
      name: "sp-one-again",
      saml: { metadataXml: Buffer.from(spMetadata({ entityId })).toString("base64") },
    });
    expect(r.status).toBe(409);
    expect(JSON.stringify(r.body)).toContain("Errors.App.Saml.EntityIdTaken");
  });

  const refused: [string, string][] = [
    ["a DOCTYPE (entity expansion)", `<!DOCTYPE x [<!ENTITY a "aaaa">]>${spMetadata({ entityId: "https://x.example.com/a" })}`],
    [
      "an external entity",
      spMetadata({ entityId: "https://x.example.com/b" }).replace(
        '<?xml version="1.0"?>',
        '<?xml version="1.0"?><!DOCTYPE md [<!ENTITY e SYSTEM "file:///etc/passwd">]>',
      ),
    ],
    ["malformed XML", "<md:EntityDescriptor"],
    ["no ACS", spMetadata({ entityId: "https://x.example.com/c", acs: [] }).replace(/<md:AssertionConsumerService[^>]*>/g, "")],
    ["an ACS that is not http(s)", spMetadata({ entityId: "https://x.example.com/d", acs: [{ url: "javascript:alert(1)", index: 0 }] })],
    ["an http ACS on a host that is not loopback", spMetadata({ entityId: "https://x.example.com/f", acs: [{ url: "http://sp.example.com/acs", index: 0 }] })],
    ["AuthnRequestsSigned without a certificate", spMetadata({ entityId: "https://x.example.com/e", authnRequestsSigned: true })],
    ["another root element", '<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata"/>'],
  ];
  it.each(refused)("refuse metadata with %s (400, nothing created)", async (_what, xml) => {
    const r = await call(t, "rest", t.pat, "CreateApplication", {
      projectId,
      name: `bad-${_what.length}`,
      saml: { metadataXml: Buffer.from(xml).toString("base64") },
    });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain("Errors.App.Saml.Metadata.Invalid");
  });

  it("cannot change kind", async () => {
    const appId = await samlApp(t, projectId, "sp-kind", spMetadata({ entityId: "https://sp-kind.example.com" }));
    const r = await call(t, "rest", t.pat, "UpdateApplication", { projectId, appId, api: {} });
    expect(r.status).toBe(400);
  });

  it("need project.app.write (an authenticated caller without it is denied)", async () => {
    const { pat } = await machine(t, await defaultOrgId(t), "no-app-rights");
    const r = await call(t, "rest", pat, "CreateApplication", {
      projectId,
      name: "denied",
      saml: { metadataXml: Buffer.from(spMetadata({ entityId: "https://denied.example.com" })).toString("base64") },
    });
    // A project the caller may not read is not found (its existence is not told).
    expect(r.status).toBe(404);
  });

  it("need a caller at all", async () => {
    const r = await call(t, "rest", undefined, "CreateApplication", {
      projectId,
      name: "anon",
      saml: { metadataXml: Buffer.from(spMetadata({ entityId: "https://anon.example.com" })).toString("base64") },
    });
    expect(r.status).toBe(401);
  });
});

describe("SAML applications by metadata URL", () => {
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === "/metadata") return void res.end(spMetadata({ entityId: "https://by-url.example.com/sp" }));
      if (req.url === "/huge") return void res.end("<x>".padEnd(300 * 1024, " "));
      if (req.url === "/moved") {
        res.writeHead(302, { location: "/metadata" });
        return void res.end();
      }
      res.writeHead(404);
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it("fetch the metadata once and keep it with the URL", async () => {
    const { appId } = await admin(t, "CreateApplication", { projectId, name: "by-url", saml: { metadataUrl: `${base}/metadata` } });
    const { app } = await admin(t, "GetApplication", { projectId, appId });
    expect(app.saml).toMatchObject({ entityId: "https://by-url.example.com/sp", metadataUrl: `${base}/metadata` });
    expect(Buffer.from(app.saml.metadataXml, "base64").toString()).toContain("https://by-url.example.com/sp");
  });

  const bad: [string, (b: string) => Json, RegExp][] = [
    ["a document over 256 KiB", (b) => ({ metadataUrl: `${b}/huge` }), /larger than/],
    ["a redirect", (b) => ({ metadataUrl: `${b}/moved` }), /redirects are not followed/],
    ["a 404", (b) => ({ metadataUrl: `${b}/missing` }), /answered 404/],
    ["another scheme", () => ({ metadataUrl: "file:///etc/passwd" }), /http\(s\) URL/],
    ["both a URL and XML", (b) => ({ metadataUrl: `${b}/metadata`, metadataXml: Buffer.from("<x/>").toString("base64") }), /not both/],
  ];
  it.each(bad)("refuse %s", async (_what, saml, message) => {
    const r = await call(t, "rest", t.pat, "CreateApplication", { projectId, name: `by-url-${_what.length}`, saml: saml(base) });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toMatch(message);
  });
});

describe("SAML applications by metadata URL, by default (SSRF)", () => {
  let strict: TestServer;
  let strictProject: string;
  let server: http.Server;
  let port: number;
  let hits = 0;
  beforeAll(async () => {
    strict = await startTestServer();
    strictProject = await project(strict, await defaultOrgId(strict), "SSRF", []);
    server = http.createServer((_req, res) => {
      hits++;
      res.end(spMetadata({ entityId: "https://ssrf.example.com/sp" }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  }, 120_000);
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await strict?.stop();
  });

  // Only loopback targets here (nothing else may be sent traffic); the other ranges are covered by isPublicAddress's
  // unit test. A listening server on the port proves the refusal is svc's, not a failed connection.
  const refusals: [string, () => string, RegExp][] = [
    ["plain http", () => `http://127.0.0.1:${port}/metadata`, /must be an https URL/],
    ["a loopback address", () => `https://127.0.0.1:${port}/metadata`, /private, loopback or link-local/],
    ["another loopback address", () => `https://127.9.9.9:${port}/metadata`, /private, loopback or link-local/],
    ["IPv6 loopback", () => `https://[::1]:${port}/metadata`, /private, loopback or link-local/],
    ["an IPv4-mapped loopback", () => `https://[::ffff:127.0.0.1]:${port}/metadata`, /private, loopback or link-local/],
    ["a decimal loopback", () => `https://2130706433:${port}/metadata`, /private, loopback or link-local/],
    ["a name resolving to loopback", () => `https://localhost:${port}/metadata`, /localhost is a loopback name/],
    ["credentials in the URL", () => `https://user:pw@example.com/metadata`, /credentials/],
  ];
  it.each(refusals)("refuse %s", async (_what, url, message) => {
    const r = await call(strict, "rest", strict.pat, "CreateApplication", { projectId: strictProject, name: "ssrf", saml: { metadataUrl: url() } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toMatch(message);
    expect(hits).toBe(0);
  });

  it("fetch from loopback over http once SVC_SAML_METADATA_ALLOW_PRIVATE=true (the suite's other server)", async () => {
    const { appId } = await admin(t, "CreateApplication", { projectId, name: "ssrf-allowed", saml: { metadataUrl: `http://localhost:${port}/metadata` } });
    expect(appId).toBeTruthy();
    expect(hits).toBe(1);
  });
});

describe("SAML applications by metadata URL: the time limit", () => {
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    // Headers at once, then a body that never ends.
    server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/xml" });
      res.write("<md:EntityDescriptor");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });

  it("gives up on a body still streaming after 5 seconds", async () => {
    const started = Date.now();
    const r = await call(t, "rest", t.pat, "CreateApplication", { projectId, name: "slow", saml: { metadataUrl: `${base}/metadata` } });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toMatch(/within 5 seconds/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_500);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
