// The SP's answer to svc's SOAP LogoutRequest (src/domain/saml/soap-logout.ts), each way it is refused: only a SOAP 1.1
// Envelope whose Body holds exactly a LogoutResponse to the request sent, from that SP, with a top-level Success (and,
// when signed, a signature that verifies with the SP's registered certificates) counts as delivered.
import { describe, expect, it } from "@jest/globals";
import { readSoapLogoutAnswer } from "../../src/domain/saml/soap-logout.js";
import { signAuthnRequest, spKeyPair } from "../support/saml.js";

const SP = "https://sp.example.com/sp";
const sp = spKeyPair("sp.example.com");
const expected = { requestId: "_req1", spEntityId: SP, certs: [sp.certB64] };
const envelope = (inner: string) => `<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>${inner}</soap:Body></soap:Envelope>`;
function response(o: { inResponseTo?: string; issuer?: string | null; status?: string; version?: string } = {}): string {
  const issuer = o.issuer === null ? "" : `<saml:Issuer>${o.issuer ?? SP}</saml:Issuer>`;
  return `<samlp:LogoutResponse xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_resp1" Version="${o.version ?? "2.0"}" IssueInstant="2026-12-02T00:00:00Z" InResponseTo="${o.inResponseTo ?? "_req1"}">${issuer}<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:${o.status ?? "Success"}"/></samlp:Status></samlp:LogoutResponse>`;
}
const read = (body: string, status = 200) => readSoapLogoutAnswer(status, body, expected);

describe("readSoapLogoutAnswer", () => {
  it("delivered: Success to the request sent, unsigned or signed with the SP's key, with or without an Issuer", () => {
    expect(read(envelope(response()))).toEqual({ delivered: true });
    expect(read(envelope(response({ issuer: null })))).toEqual({ delivered: true });
    expect(read(envelope(signAuthnRequest(response(), sp)))).toEqual({ delivered: true });
  });

  it("refused: another request, another issuer, another version, a failure status, a bad or doubled signature", () => {
    expect(read(envelope(response({ inResponseTo: "_other" })))).toMatchObject({
      delivered: false,
      final: false,
      error: expect.stringMatching(/InResponseTo/),
    });
    expect(read(envelope(response({ issuer: "https://evil.example.com" })))).toMatchObject({ delivered: false, error: expect.stringMatching(/Issuer/) });
    expect(read(envelope(response({ version: "1.1" })))).toMatchObject({ delivered: false, error: expect.stringMatching(/Version/) });
    expect(read(envelope(response({ status: "Responder" })))).toMatchObject({ delivered: false, final: false });
    expect(read(envelope(response({ status: "Requester" })))).toMatchObject({ delivered: false, final: true });
    const forged = signAuthnRequest(response(), spKeyPair("forger"));
    expect(read(envelope(forged))).toMatchObject({ delivered: false, error: expect.stringMatching(/does not verify/) });
    // A signed response whose content was changed afterwards.
    const changed = signAuthnRequest(response({ status: "Responder" }), sp).replace("status:Responder", "status:Success");
    expect(read(envelope(changed))).toMatchObject({ delivered: false, error: expect.stringMatching(/does not verify/) });
    const signed = signAuthnRequest(response(), sp);
    const sig = signed.slice(signed.indexOf("<ds:Signature"), signed.indexOf("</ds:Signature>") + "</ds:Signature>".length);
    expect(read(envelope(signed.replace("</samlp:Status>", `</samlp:Status>${sig}`)))).toMatchObject({
      delivered: false,
      error: expect.stringMatching(/exactly one signature/),
    });
  });

  it("refused: not SOAP, a DOCTYPE, a Body with more or other than a LogoutResponse, a fault, an HTTP error", () => {
    expect(read(response())).toMatchObject({ delivered: false, error: "the answer is not a SOAP 1.1 Envelope" });
    expect(read(`<!DOCTYPE x>${envelope(response())}`)).toMatchObject({ delivered: false, error: expect.stringMatching(/DOCTYPE/) });
    expect(read("not xml <")).toMatchObject({ delivered: false });
    expect(read(envelope(response() + response()))).toMatchObject({ delivered: false, error: expect.stringMatching(/exactly one element/) });
    expect(read(envelope("<x/>"))).toMatchObject({ delivered: false, error: expect.stringMatching(/no samlp:LogoutResponse/) });
    const fault = envelope("<soap:Fault><faultcode>soap:Server</faultcode><faultstring>down</faultstring></soap:Fault>");
    expect(read(fault, 500)).toMatchObject({ delivered: false, error: "SOAP fault: down (HTTP 500)" });
    expect(read(envelope(response()), 500)).toMatchObject({ delivered: false, error: "answered 500" });
    expect(read("", 502)).toMatchObject({ delivered: false, error: "answered 502" });
  });
});
