// The bench's peer (bench/peer/): oidc-provider in its own process, in memory and with its tokens in PostgreSQL
// through bench/peer/pg-adapter.ts, answers the two compared requests as svc's scenarios expect (a token for the
// client credentials grant, an active introspection naming its audience and scope), refuses a wrong secret, and the
// persisted peer really writes and reads its table (so the side-by-side figures compare like with like).
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { PEER_TABLE } from "../../bench/peer/pg-adapter.js";
import { type Peer, startPeer, stopPeer } from "../../bench/peer.js";
import { freshDatabase, PG_URL, type TestDatabase, withPgClient } from "../support/db.js";

const secret = randomBytes(24).toString("base64url");
const settings = { poolSize: 2, clientId: "peer-test", clientSecret: secret, ttlSeconds: 600, resource: "urn:test:api", scope: "api" };
const basic = (s: string) => `Basic ${Buffer.from(`peer-test:${s}`).toString("base64")}`;
const FORM = { "content-type": "application/x-www-form-urlencoded" };

let db: TestDatabase | undefined;
const peers: Peer[] = [];

beforeAll(async () => {
  peers.push(await startPeer("memory", { ...settings, adapter: "memory" }));
  if (PG_URL) {
    db = await freshDatabase();
    peers.push(await startPeer("postgres", { ...settings, adapter: "postgres", databaseUrl: db.url }));
  }
}, 60_000);
afterAll(async () => {
  await Promise.all(peers.map(stopPeer));
  await db?.drop();
});

async function token(url: string, pass = secret): Promise<Response> {
  return fetch(`${url}/token`, {
    method: "POST",
    headers: { ...FORM, authorization: basic(pass) },
    body: new URLSearchParams({ grant_type: "client_credentials", scope: "api" }),
  });
}

async function introspect(url: string, value: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/token/introspection`, {
    method: "POST",
    headers: { ...FORM, authorization: basic(secret) },
    body: new URLSearchParams({ token: value }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

describe("the bench's oidc-provider peer", () => {
  it("issues an opaque token with the resource's audience and scope, and introspects it", async () => {
    for (const peer of peers) {
      const res = await token(peer.url);
      expect({ peer: peer.label, status: res.status }).toEqual({ peer: peer.label, status: 200 });
      const body = (await res.json()) as { access_token: string; scope: string; expires_in: number };
      expect(body.access_token.split(".")).toHaveLength(1);
      expect(body).toMatchObject({ scope: "api", expires_in: 600 });
      expect(await introspect(peer.url, body.access_token)).toMatchObject({ active: true, client_id: "peer-test", aud: "urn:test:api", scope: "api" });
      expect(await introspect(peer.url, `${body.access_token}x`)).toEqual({ active: false });
    }
  });

  it("refuses a wrong client secret", async () => {
    for (const peer of peers) {
      const res = await token(peer.url, `${secret}x`);
      expect({ peer: peer.label, status: res.status }).toEqual({ peer: peer.label, status: 401 });
      expect(((await res.json()) as { error: string }).error).toBe("invalid_client");
    }
  });

  (PG_URL ? it : it.skip)("keeps the persisted peer's tokens in its PostgreSQL table, found by id, gone when deleted", async () => {
    const peer = peers.find((p) => p.label === "postgres") as Peer;
    const { access_token } = (await (await token(peer.url)).json()) as { access_token: string };
    const rows = await withPgClient(db?.url as string, (c) =>
      c.query(`SELECT model, payload->>'aud' AS aud, expires_at > now() AS live FROM ${PEER_TABLE} WHERE id = $1`, [access_token]),
    );
    expect(rows.rows).toEqual([{ model: "ClientCredentials", aud: "urn:test:api", live: true }]);
    await withPgClient(db?.url as string, (c) => c.query(`DELETE FROM ${PEER_TABLE} WHERE id = $1`, [access_token]));
    expect(await introspect(peer.url, access_token)).toEqual({ active: false });
  });
});
