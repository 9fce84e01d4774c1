// A client that goes away from a server stream (grpc.health.v1.Health/Watch, reflection) ends the handler's work
// at once: shutdown then takes well under its grace period instead of waiting for the stream.
import http2 from "node:http2";
import { describe, expect, it } from "@jest/globals";
import { startTestServer } from "../support/server.js";

const GRACE_MS = 30_000;
const frame = (json: string) => Buffer.concat([Buffer.from([0, 0, 0, 0, Buffer.byteLength(json)]), Buffer.from(json)]);

describe("abandoned streams", () => {
  it("end when an h2c client disconnects, so that shutdown does not wait for them", async () => {
    const t = await startTestServer({ SVC_SHUTDOWN_GRACE_MS: String(GRACE_MS) });
    let stopped = false;
    try {
      for (const path of ["/grpc.health.v1.Health/Watch", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"]) {
        const session = http2.connect(t.url);
        const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/connect+json" });
        // Watch takes its one request message and streams; reflection is bidirectional and stays open for more.
        if (path.includes("Health")) req.end(frame("{}"));
        else req.write(frame('{"listServices":""}'));
        await new Promise<void>((resolve) => req.once("data", () => resolve()));
        // Gone at once: the connection closes under the open stream.
        session.destroy();
      }
      await new Promise((r) => setTimeout(r, 200));
      const started = Date.now();
      await t.stop();
      stopped = true;
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      if (!stopped) await t.stop();
    }
  }, 60_000);
});
