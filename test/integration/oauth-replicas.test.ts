// Two replicas on one PostgreSQL with the same master key and external URL:
// each accepts the other's opaque and JWT access tokens, they publish the
// same keys, and deactivating the user stops its tokens at once on both.
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { PG_URL } from "../support/db.js";
import { type ChildServer, type Replicas, rest, startReplicas } from "../support/server.js";

const describePg = PG_URL ? describe : describe.skip;
const ISSUER = "https://svc.replicas.test";
const MGMT = "urn:svc:iam:org:project:id:svc:aud";

describePg("OAuth tokens across replicas on one PostgreSQL", () => {
  let replicas: ChildServer[] = [];
  let pat: string;
  let started: Replicas | undefined;

  beforeAll(async () => {
    started = await startReplicas(2, { SVC_EXTERNAL_URL: ISSUER });
    ({ servers: replicas, pat } = started);
  }, 120_000);
  afterAll(() => started?.stop());

  const [a, b] = [0, 1];
  const url = (i: number) => (replicas[i] as ChildServer).url;
  const token = async (i: number, user: string, secret: string) => {
    const res = await fetch(`${url(i)}/oauth/v2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${Buffer.from(`${user}:${secret}`).toString("base64")}` },
      body: new URLSearchParams({ grant_type: "client_credentials", scope: MGMT }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { access_token: string }).access_token;
  };

  it("share signing keys and accept each other's tokens; deactivation is seen at once by both", async () => {
    const jwks = await Promise.all([a, b].map(async (i) => (await (await fetch(`${url(i)}/oauth/v2/keys`)).json()) as { keys: { kid: string }[] }));
    expect(jwks[0]?.keys.map((k) => k.kid)).toEqual(jwks[1]?.keys.map((k) => k.kid));
    const instance = (await (await rest(url(a), pat, "GET", "/v2/instance")).json()) as { instance: { defaultOrganizationId: string } };
    const users: Record<string, { id: string; secret: string }> = {};
    for (const [name, type] of [
      ["rep-opaque", undefined],
      ["rep-jwt", "ACCESS_TOKEN_TYPE_JWT"],
    ] as const) {
      const created = await rest(url(a), pat, "POST", "/v2/users/new", {
        organizationId: instance.instance.defaultOrganizationId,
        username: name,
        machine: { name, ...(type ? { accessTokenType: type } : {}) },
      });
      expect(created.status).toBe(200);
      const { id } = (await created.json()) as { id: string };
      const s = await rest(url(b), pat, "POST", `/v2/users/${id}/secret`, {});
      users[name] = { id, secret: ((await s.json()) as { clientSecret: string }).clientSecret };
    }
    const tokens: { user: string; tok: string }[] = [];
    for (const name of Object.keys(users)) {
      const u = users[name] as { id: string; secret: string };
      for (const issuer of [a, b]) {
        const tok = await token(issuer, name, u.secret);
        if (name === "rep-jwt") expect(tok.split(".")).toHaveLength(3);
        tokens.push({ user: u.id, tok });
        for (const r of [a, b]) expect((await rest(url(r), tok, "GET", `/v2/users/${u.id}`)).status).toBe(200);
      }
    }
    // Deactivate both users through replica A; replica B refuses their tokens in the very next request.
    for (const u of Object.values(users)) expect((await rest(url(a), pat, "POST", `/v2/users/${u.id}/deactivate`, {})).status).toBe(200);
    for (const { user, tok } of tokens) {
      expect((await rest(url(b), tok, "GET", `/v2/users/${user}`)).status).toBe(401);
      expect((await rest(url(a), tok, "GET", `/v2/users/${user}`)).status).toBe(401);
    }
  }, 60_000);
});
