// The receiver docs/actions.md shows, run as written (the code block taken from the page): svc's signed delivery of
// user.human.added is accepted and logged once; a forged signature, a stale timestamp and a missing header get 401.
import { type ChildProcess, spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { freePort } from "../support/apache.js";
import { createHuman, defaultOrgId } from "../support/fixtures.js";
import { admin } from "../support/rpc.js";
import { startTestServer, type TestServer } from "../support/server.js";

let t: TestServer;
let receiver: ChildProcess | undefined;
let output = "";
let port: number;
let key: string;

/** The first js code block after `marker` in the page. */
function snippet(page: string, marker: string): string {
  const text = readFileSync(path.join(import.meta.dirname, "../../docs", page), "utf8");
  const at = text.indexOf(marker);
  expect(at).toBeGreaterThan(-1);
  const block = /```js\n([\s\S]*?)```/.exec(text.slice(at));
  if (!block?.[1]) throw new Error(`no js block after "${marker}" in ${page}`);
  return block[1];
}

async function until<T>(what: string, probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; receiver output: ${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  t = await startTestServer({ SVC_ACTIONS_ALLOW_PRIVATE: "true" });
  port = await freePort();
  const target = await admin(t, "CreateTarget", { name: "docs-receiver", endpoint: `http://127.0.0.1:${port}/`, kind: "TARGET_KIND_WEBHOOK" });
  key = target.signingKey;
  await admin(t, "SetExecution", { event: { event: "user.human.added" }, targetIds: [target.id] });
  const dir = mkdtempSync(path.join(tmpdir(), "svc-receiver-"));
  const file = path.join(dir, "receiver.mjs");
  writeFileSync(file, snippet("actions.md", "A receiver in Node that checks the signature"));
  receiver = spawn(process.execPath, [file], { env: { ...process.env, SVC_TARGET_KEY: key, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] });
  receiver.stdout?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  receiver.stderr?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" }).then(
      (r) => r.status,
      () => 0,
    );
    if (up) break;
    await new Promise((r) => setTimeout(r, 100));
  }
}, 120_000);
afterAll(async () => {
  receiver?.kill();
  await t?.stop();
});

it("accepts svc's signed delivery and logs it once", async () => {
  await createHuman(t, await defaultOrgId(t), "docs-receiver-user");
  await until("the logged event", () => output.includes("user.human.added"));
  // svc took the 204 as delivered.
  await until("the delivery recorded as delivered", async () => ((await admin(t, "ListDeliveries", { state: "delivered" })).result ?? []).length === 1);
  expect(output.match(/user\.human\.added/g)).toHaveLength(1);
});

it("refuses a forged signature, a stale timestamp and a request without one (401)", async () => {
  const body = JSON.stringify({ type: "user.human.added", forged: true });
  const now = Math.floor(Date.now() / 1000);
  const sign = (k: Buffer, at: number) => `t=${at},v1=${createHmac("sha256", k).update(`${at}.${body}`).digest("hex")}`;
  const post = (headers: Record<string, string>) => fetch(`http://127.0.0.1:${port}/`, { method: "POST", headers, body }).then((r) => r.status);
  expect(await post({ "svc-signature": sign(Buffer.from("not the key"), now) })).toBe(401);
  expect(await post({ "svc-signature": sign(Buffer.from(key, "base64url"), now - 3600) })).toBe(401);
  expect(await post({})).toBe(401);
  // The right key and a fresh timestamp pass: the checks above failed for their reason only.
  expect(await post({ "svc-signature": sign(Buffer.from(key, "base64url"), now), "idempotency-key": "docs-test" })).toBe(204);
  expect(output.includes("forged")).toBe(false);
});
