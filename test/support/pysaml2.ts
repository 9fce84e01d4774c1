// pysaml2 (Debian's python3-pysaml2) as service providers that keep their state between messages: one process
// (pysaml2-slo.py) holding several SPs, driven by one JSON command a line.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import type { Json } from "./rpc.js";
import { type KeyPair, POST, REDIRECT, samlApp, samlTempFile, samlWorkDir, spKeyPair, spMetadata } from "./saml.js";
import type { TestServer } from "./server.js";

export class Pysaml2 {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting: ((line: string) => void)[] = [];
  stderr = "";
  constructor() {
    this.child = spawn("/usr/bin/python3", [path.join(import.meta.dirname, "pysaml2-slo.py")]);
    this.child.stderr.on("data", (d) => {
      this.stderr += String(d);
    });
    createInterface({ input: this.child.stdout }).on("line", (line) => this.waiting.shift()?.(line));
  }
  /** One command; its answer ({"error": ...} when pysaml2 refused). */
  async call(cmd: Json): Promise<Json> {
    const line = await new Promise<string>((resolve) => {
      this.waiting.push(resolve);
      this.child.stdin.write(`${JSON.stringify(cmd)}\n`);
    });
    return JSON.parse(line);
  }
  /** One command that must succeed. */
  async ok(cmd: Json): Promise<Json> {
    const out = await this.call(cmd);
    if (out.error) throw new Error(`pysaml2 ${cmd.cmd}: ${out.error}\n${this.stderr.slice(-2000)}`);
    return out;
  }
  stop(): void {
    this.child.stdin.end();
  }
}

/** A pysaml2 SP: its entity id, ACS (HTTP-POST), SLO endpoint (both bindings) and signing key pair. */
export interface PySp {
  entity: string;
  acs: string;
  slo: string;
  keys: KeyPair;
}

export const pySp = (host: string): PySp => ({ entity: `https://${host}/sp`, acs: `https://${host}/acs`, slo: `https://${host}/slo`, keys: spKeyPair(host) });

/**
 * Registers each SP as a SAML application of `projectId` (its metadata with its certificate and SLO endpoints, and a
 * SOAP one at `soapSlo` when given; the Response signed, plus `saml`'s settings) and starts pysaml2 with them against svc's IdP metadata.
 */
export async function startPysaml2(t: TestServer, projectId: string, sps: { sp: PySp; saml?: Json; soapSlo?: string }[]): Promise<Pysaml2> {
  const dir = await samlWorkDir();
  const config = [];
  for (const { sp, saml, soapSlo } of sps) {
    const host = new URL(sp.entity).host;
    const slo = [
      { url: sp.slo, binding: REDIRECT },
      { url: sp.slo, binding: POST },
      // A SOAP SingleLogoutService (a receiver of the test's that hands the message to pysaml2: soap_logout_request).
      ...(soapSlo ? [{ url: soapSlo, binding: "urn:oasis:names:tc:SAML:2.0:bindings:SOAP" }] : []),
    ];
    await samlApp(t, projectId, host, spMetadata({ entityId: sp.entity, acs: [{ url: sp.acs }], cert: sp.keys, slo }), { signResponse: true, ...saml });
    const key = path.join(dir, `${host}.key`);
    const cert = path.join(dir, `${host}.crt`);
    await writeFile(key, sp.keys.privateKeyPem);
    await writeFile(cert, sp.keys.certPem);
    config.push({ entity: sp.entity, acs: sp.acs, slo: sp.slo, key, cert });
  }
  const idp = await samlTempFile(`idp-metadata-${Date.now()}.xml`, await (await fetch(`${t.url}/saml/v2/metadata`)).text());
  const py = new Pysaml2();
  await py.ok({ cmd: "init", idp, sps: config });
  return py;
}
