// An external SAML identity provider for the brokering tests: samlify's IdentityProvider behind a small HTTP server on
// a loopback port. Its SSO endpoint (HTTP-Redirect GET or HTTP-POST) parses svc's AuthnRequest with samlify — the
// signature checked with the certificate of svc's SP metadata, fetched from svc, and the XML validated by xmllint
// against the OASIS protocol schema — and answers, for the user it is told to sign in, with the page that posts a
// signed Response to svc's ACS. The tests can also build Responses directly, with any value changed.
import http from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { type KeyPair, POST, REDIRECT, spKeyPair, xsdValid } from "./saml.js";

// samlify's type declarations pull in an older @xmldom whose types add the DOM library to every file of the project
// (fetch's body types then differ): it is loaded untyped, with the little of its API used here declared below.
interface SamlifySp {
  entityMeta: { getAssertionConsumerService(binding: string): string | string[]; getEntityID(): string };
}
interface SamlifyIdpEntity {
  getMetadata(): string;
  parseLoginRequest(sp: SamlifySp, binding: string, request: unknown): Promise<unknown>;
  createLoginResponse(sp: SamlifySp, info: unknown, binding: string, user: object, o: unknown): Promise<unknown>;
}
const samlify = createRequire(import.meta.url)("samlify") as {
  setSchemaValidator(v: { validate(xml: string): Promise<string> }): void;
  IdentityProvider(settings: Record<string, unknown>): SamlifyIdpEntity;
  ServiceProvider(settings: Record<string, unknown>): SamlifySp;
  Utility: { inflateString(base64: string): string };
  SamlLib: { replaceTagsByValue(template: string, values: Record<string, string>): string };
};

// samlify validates every message it parses; xmllint with the OASIS schemas (no network) is the validator.
samlify.setSchemaValidator({
  validate: async (xml: string) => {
    const r = await xsdValid(xml, "protocol");
    if (!r.ok) throw new Error(`schema validation failed: ${r.output}`);
    return "valid";
  },
});

export interface ExternalUser {
  nameId: string;
  email: string;
  firstName: string;
  surName: string;
  userName: string;
  employeeNumber?: string;
}

/** The template's values; a test overrides any of them. */
export type ResponseValues = Record<string, string>;

const ATTRIBUTE = (name: string) =>
  `<saml:Attribute Name="${name}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic"><saml:AttributeValue xsi:type="xs:string">{${name}}</saml:AttributeValue></saml:Attribute>`;

/** A full Response (samlify's default has no AuthnStatement): status, one Assertion with attributes. */
const TEMPLATE = `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="{ID}" Version="2.0" IssueInstant="{IssueInstant}" Destination="{Destination}" InResponseTo="{InResponseTo}"><saml:Issuer>{Issuer}</saml:Issuer><samlp:Status><samlp:StatusCode Value="{StatusCode}"/></samlp:Status><saml:Assertion xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema" ID="{AssertionID}" Version="2.0" IssueInstant="{IssueInstant}"><saml:Issuer>{AssertionIssuer}</saml:Issuer><saml:Subject><saml:NameID Format="{NameIDFormat}">{NameID}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="{SubjectConfirmationDataNotOnOrAfter}" Recipient="{SubjectRecipient}" InResponseTo="{SubjectInResponseTo}"/></saml:SubjectConfirmation></saml:Subject><saml:Conditions NotBefore="{ConditionsNotBefore}" NotOnOrAfter="{ConditionsNotOnOrAfter}"><saml:AudienceRestriction><saml:Audience>{Audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions><saml:AuthnStatement AuthnInstant="{IssueInstant}" SessionIndex="{AssertionID}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement><saml:AttributeStatement>${["Email", "FirstName", "SurName", "UserName", "employeeNumber"].map(ATTRIBUTE).join("")}</saml:AttributeStatement></saml:Assertion></samlp:Response>`;

const uid = () => `_${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;

export interface ParsedRequest {
  /** samlify's parse of the AuthnRequest. */
  info: { extract: { request: { id: string }; issuer: string }; samlContent: string };
  relayState: string;
  /** The SP, from the metadata at the request's Issuer (svc's SP metadata URL). */
  sp: SamlifySp;
}

export interface SamlifyIdp {
  /** Also where its metadata is served. */
  entityId: string;
  ssoUrl: string;
  keys: KeyPair;
  idp: SamlifyIdpEntity;
  metadata: string;
  /** Whom the SSO endpoint signs in next. */
  user: ExternalUser;
  /** Changes to the next Responses the SSO endpoint sends (none by default). */
  values: ResponseValues;
  /** The SP as samlify reads svc's metadata, and what samlify then signs. */
  sp(entityId: string, o?: Signing): Promise<SamlifySp>;
  /** Parses svc's AuthnRequest from the HTTP-Redirect URL (or the HTTP-POST form) with samlify. */
  parseRequest(input: { url: string } | { form: Record<string, string> }): Promise<ParsedRequest>;
  /** A signed Response to the request (base64), with `values` changed. */
  response(req: ParsedRequest, user: ExternalUser, values?: ResponseValues, o?: Signing): Promise<string>;
  close(): Promise<void>;
}

/** What samlify signs: the Assertion (svc's metadata asks for it), or `sign` the Response instead, or both. */
export interface Signing {
  sign?: "assertion" | "response" | "both";
  /** Changes the Response's template before it is filled in and signed. */
  template?: (template: string) => string;
}

export interface SamlifyIdpOptions {
  entityId?: string;
  wantAuthnRequestsSigned?: boolean;
  /** Another key pair under the same entity id (a forger's). */
  keys?: KeyPair;
  /** The XML signature algorithm of its Responses (RSA-SHA256 by default). */
  signatureAlgorithm?: string;
}

function formPage(action: string, fields: Record<string, string>): string {
  const esc = (v: string) => v.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  const inputs = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}"/>`)
    .join("");
  return `<!DOCTYPE html><html><head><title>IdP</title></head><body><form id="to-sp" method="post" action="${esc(action)}">${inputs}<button type="submit">Continue</button></form><script>document.getElementById("to-sp").submit()</script></body></html>`;
}

async function readForm(req: http.IncomingMessage): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()));
}

export async function startSamlifyIdp(o: SamlifyIdpOptions = {}): Promise<SamlifyIdp> {
  const keys = o.keys ?? spKeyPair("idp.example.test");
  const spCache = new Map<string, SamlifySp>();
  let self: SamlifyIdp;
  const server = http.createServer((req, res) => {
    (async () => {
      const url = new URL(req.url ?? "/", self.ssoUrl);
      if (url.pathname === "/metadata") {
        res.writeHead(200, { "content-type": "application/samlmetadata+xml" });
        return void res.end(self.metadata);
      }
      const parsed = await self.parseRequest(req.method === "POST" ? { form: await readForm(req) } : { url: url.toString() });
      const acs = parsed.sp.entityMeta.getAssertionConsumerService("post") as string;
      const samlResponse = await self.response(parsed, self.user, self.values);
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(formPage(acs, { SAMLResponse: samlResponse, RelayState: parsed.relayState }));
    })().catch((err: Error) => {
      if (process.env.SAML_IDP_DEBUG) console.error(err);
      if (res.headersSent) return void res.destroy();
      res.writeHead(400, { "content-type": "text/plain" });
      res.end(`refused: ${err.message}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const ssoUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/sso`;
  const entityId = o.entityId ?? `${ssoUrl.replace(/\/sso$/, "")}/metadata`;
  const idp = samlify.IdentityProvider({
    entityID: entityId,
    signingCert: keys.certPem,
    privateKey: keys.privateKeyPem,
    wantAuthnRequestsSigned: o.wantAuthnRequestsSigned ?? true,
    requestSignatureAlgorithm: o.signatureAlgorithm ?? "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
    singleSignOnService: [
      { Binding: REDIRECT, Location: ssoUrl },
      { Binding: POST, Location: ssoUrl },
    ],
    singleLogoutService: [{ Binding: REDIRECT, Location: `${ssoUrl.replace(/\/sso$/, "")}/slo` }],
    nameIDFormat: ["urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"],
    loginResponseTemplate: { context: TEMPLATE, attributes: [] },
  });

  async function spOf(spEntityId: string, opts: Signing = {}): Promise<SamlifySp> {
    const sign = opts.sign ?? "assertion";
    const key = `${spEntityId}|${sign}`;
    let sp = spCache.get(key);
    if (!sp) {
      let metadata = await (await fetch(spEntityId)).text();
      // Only the Response signed: the SP "does not want" signed assertions, samlify then signs the message.
      if (sign === "response") metadata = metadata.replace('WantAssertionsSigned="true"', 'WantAssertionsSigned="false"');
      sp = samlify.ServiceProvider({ metadata, wantMessageSigned: sign === "both" });
      spCache.set(key, sp);
    }
    return sp;
  }

  self = {
    entityId,
    ssoUrl,
    keys,
    idp,
    metadata: idp.getMetadata(),
    user: { nameId: "ext-user@idp.example.test", email: "ext-user@idp.example.test", firstName: "Ext", surName: "User", userName: "ext-user" },
    values: {},
    sp: spOf,
    async parseRequest(input) {
      let issuer: string;
      let request: { query?: Record<string, string>; octetString?: string; body?: Record<string, string> };
      let binding: "redirect" | "post";
      if ("url" in input) {
        const u = new URL(input.url);
        const raw = u.search.slice(1);
        request = {
          query: Object.fromEntries(u.searchParams),
          octetString: raw
            .split("&")
            .filter((p) => !p.startsWith("Signature="))
            .join("&"),
        };
        binding = "redirect";
        issuer = issuerOf(samlify.Utility.inflateString(decodeURIComponent(u.searchParams.get("SAMLRequest") ?? "")));
      } else {
        request = { body: input.form };
        binding = "post";
        issuer = issuerOf(Buffer.from(input.form.SAMLRequest ?? "", "base64").toString());
      }
      const sp = await spOf(issuer);
      const info = (await idp.parseLoginRequest(sp, binding, request)) as ParsedRequest["info"];
      const relayState = (binding === "redirect" ? request.query?.RelayState : request.body?.RelayState) ?? "";
      return { info, relayState, sp };
    },
    async response(req, user, values = {}, opts = {}) {
      const sp = opts.sign && opts.sign !== "assertion" ? await spOf(req.info.extract.issuer, opts) : req.sp;
      const now = new Date();
      const later = new Date(now.getTime() + 5 * 60_000).toISOString();
      const acs = sp.entityMeta.getAssertionConsumerService("post") as string;
      const all: ResponseValues = {
        ID: uid(),
        AssertionID: uid(),
        IssueInstant: now.toISOString(),
        Destination: acs,
        InResponseTo: req.info.extract.request.id,
        SubjectInResponseTo: req.info.extract.request.id,
        Issuer: entityId,
        AssertionIssuer: entityId,
        StatusCode: "urn:oasis:names:tc:SAML:2.0:status:Success",
        NameIDFormat: "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress",
        NameID: user.nameId,
        SubjectConfirmationDataNotOnOrAfter: later,
        SubjectRecipient: acs,
        ConditionsNotBefore: now.toISOString(),
        ConditionsNotOnOrAfter: later,
        Audience: sp.entityMeta.getEntityID(),
        Email: user.email,
        FirstName: user.firstName,
        SurName: user.surName,
        UserName: user.userName,
        employeeNumber: user.employeeNumber ?? "",
        ...values,
      };
      const out = await idp.createLoginResponse(
        sp,
        req.info,
        "post",
        {},
        {
          customTagReplacement: (template: string) => ({
            id: all.ID as string,
            context: samlify.SamlLib.replaceTagsByValue(opts.template ? opts.template(template) : template, all),
          }),
        },
      );
      return (out as { context: string }).context;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return self;
}

function issuerOf(xml: string): string {
  const m = /<(?:\w+:)?Issuer[^>]*>([^<]+)<\/(?:\w+:)?Issuer>/.exec(xml);
  if (!m) throw new Error("no Issuer in the AuthnRequest");
  return m[1] as string;
}

/** The hidden fields and action of the page's form (the IdP's auto-posting page, or svc's). */
export function formOf(html: string): { action: string; fields: Record<string, string> } {
  const decode = (v: string) =>
    v
      .replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))
      .replace(/&amp;/g, "&")
      .replace(/&quot;/g, '"');
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  if (!action) throw new Error(`no form in ${html.slice(0, 300)}`);
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) fields[m[1] as string] = decode(m[2] as string);
  return { action: decode(action), fields };
}

/** Posts a form like a browser (no cookies: the ACS needs none). */
export function postTo(url: string, fields: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
  });
}
