// Access token formats (opaque, JWT) as strategies: encoding a token and
// identifying a presented one, without a server or a database.
import { generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { describe, expect, it } from "@jest/globals";
import { sha256 } from "../../src/crypto/tokens.js";
import { type AccessClaims, type FormatContext, formatFor, formatOf, jwtFormat, opaqueFormat } from "../../src/domain/oauth/token-formats.js";
import type { Store } from "../../src/store/index.js";

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const b64url = (v: string | Buffer) => Buffer.from(v).toString("base64url");

function keysWith(kid: string, priv: KeyObject, pub: KeyObject): FormatContext["keys"] {
  return {
    async sign(claims, typ) {
      const input = `${b64url(JSON.stringify({ alg: "RS256", kid, typ }))}.${b64url(JSON.stringify(claims))}`;
      return `${input}.${b64url(sign("sha256", Buffer.from(input), priv))}`;
    },
    async publicKey(k) {
      return k === kid ? pub : undefined;
    },
  };
}

const ctx: FormatContext = { issuer: "https://issuer.example", keys: keysWith("k1", privateKey, publicKey) };
const now = new Date("2026-01-01T00:00:00Z");
const iat = Math.floor(now.getTime() / 1000);
const claims: AccessClaims = { jti: "tok1", sub: "user1", aud: ["p1"], client_id: "robot", scope: "openid", iat, exp: iat + 60, extra: { role: 1 } };

/** A store whose token reads answer from fixed rows and record what was asked. */
function fakeStore(rows: { byHash?: { pat: unknown; oauth: unknown }; byId?: unknown }) {
  const asked: unknown[] = [];
  const store = {
    tokens: {
      async findByHash(hash: Uint8Array) {
        asked.push(Buffer.from(hash).toString("hex"));
        return rows.byHash ?? { pat: null, oauth: null };
      },
      async findById(id: string) {
        asked.push(id);
        return rows.byId ?? null;
      },
    },
  } as unknown as Store;
  return { store, asked };
}

describe("token formats", () => {
  it("picks the format of a presented token by its shape and the issued one by the client's type", () => {
    expect(formatOf("a.b.c")).toBe(jwtFormat);
    expect(formatOf("opaque-secret")).toBe(opaqueFormat);
    expect(formatFor("JWT")).toBe(jwtFormat);
    expect(formatFor("BEARER")).toBe(opaqueFormat);
  });

  it("opaque: a random secret stored by its SHA-256, found by hash, PATs included", async () => {
    const a = await opaqueFormat.encode(ctx, claims);
    const b = await opaqueFormat.encode(ctx, claims);
    expect(a.token).not.toBe(b.token);
    expect(a.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a.tokenHash as Uint8Array)).toEqual(Buffer.from(sha256(a.token)));
    const presented = await opaqueFormat.identify(ctx, a.token, now);
    expect(presented?.key).toMatch(/^o:/);
    const jwtRow = { format: "jwt" };
    const { store, asked } = fakeStore({ byHash: { pat: { id: "pat" }, oauth: jwtRow } });
    // A JWT row found by hash is not an opaque token.
    expect(await presented?.lookup(store)).toEqual({ pat: { id: "pat" }, oauth: null });
    expect(asked).toEqual([Buffer.from(sha256(a.token)).toString("hex")]);
  });

  it("JWT: an at+jwt signed by the active key, identified by its jti once the signature and issuer verify", async () => {
    const { token, tokenHash } = await jwtFormat.encode(ctx, claims);
    expect(tokenHash).toBeNull();
    const [header, payload] = token
      .split(".")
      .slice(0, 2)
      .map((p) => JSON.parse(Buffer.from(p, "base64url").toString()));
    expect(header).toEqual({ alg: "RS256", kid: "k1", typ: "at+jwt" });
    expect(payload).toEqual({
      iss: ctx.issuer,
      sub: "user1",
      aud: ["p1"],
      client_id: "robot",
      scope: "openid",
      iat,
      nbf: iat,
      exp: iat + 60,
      jti: "tok1",
      role: 1,
    });
    const presented = await jwtFormat.identify(ctx, token, now);
    expect(presented?.key).toBe("j:tok1");
    const { store, asked } = fakeStore({ byId: { format: "jwt", id: "tok1" } });
    expect(await presented?.lookup(store)).toEqual({ pat: null, oauth: { format: "jwt", id: "tok1" } });
    expect(asked).toEqual(["tok1"]);
    // An opaque row under a jti is not this token.
    expect(await presented?.lookup(fakeStore({ byId: { format: "opaque" } }).store)).toEqual({ pat: null, oauth: null });
  });

  it("JWT: refuses another issuer, an unknown key, a foreign signature, an expired token", async () => {
    const { token } = await jwtFormat.encode(ctx, claims);
    expect(await jwtFormat.identify({ ...ctx, issuer: "https://other.example" }, token, now)).toBeUndefined();
    expect(await jwtFormat.identify(ctx, token, new Date(now.getTime() + 120_000))).toBeUndefined();
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const forged = await jwtFormat.encode({ ...ctx, keys: keysWith("k1", other.privateKey, other.publicKey) }, claims);
    expect(await jwtFormat.identify(ctx, forged.token, now)).toBeUndefined();
    const unknownKid = await jwtFormat.encode({ ...ctx, keys: keysWith("k2", privateKey, publicKey) }, claims);
    expect(await jwtFormat.identify(ctx, unknownKid.token, now)).toBeUndefined();
    expect(await jwtFormat.identify(ctx, "not.a.jwt", now)).toBeUndefined();
  });
});
