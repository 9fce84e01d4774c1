// The project is ESM ("type": "module"); this proves that jest runs the
// generated code and the libraries later issues build on, each imported
// the way the service imports them.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { PGlite } from "@electric-sql/pglite";
import { describe, expect, it } from "@jest/globals";
import { hash, verify } from "@node-rs/argon2";
import { SAML } from "@node-saml/node-saml";
import { DOMParser } from "@xmldom/xmldom";
import { generateKeyPair, jwtVerify, SignJWT } from "jose";
import * as oidc from "openid-client";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { SignedXml } from "xml-crypto";
import { PrismaClient } from "../../gen/prisma/client.js";
import { ListUsersRequestSchema } from "../../gen/svc/user/v2/user_service_pb.js";

describe("module format", () => {
  it("round-trips a generated protobuf message", () => {
    const msg = create(ListUsersRequestSchema, { query: { limit: 7, asc: true } });
    expect(fromBinary(ListUsersRequestSchema, toBinary(ListUsersRequestSchema, msg)).query?.limit).toBe(7);
  });

  it("signs and verifies a JWT with jose 6", async () => {
    const { privateKey, publicKey } = await generateKeyPair("RS256");
    const jwt = await new SignJWT({ sub: "u1" }).setProtectedHeader({ alg: "RS256" }).sign(privateKey);
    expect((await jwtVerify(jwt, publicKey)).payload.sub).toBe("u1");
  });

  it("loads the XML signature and SAML libraries", () => {
    const doc = new DOMParser().parseFromString("<a ID='x'><b/></a>", "text/xml");
    expect(doc.documentElement?.getAttribute("ID")).toBe("x");
    expect(typeof SignedXml).toBe("function");
    expect(typeof SAML).toBe("function");
  });

  it("loads openid-client", () => {
    expect(typeof oidc.discovery).toBe("function");
  });

  it("hashes with argon2id", async () => {
    const h = await hash("correct horse battery staple");
    expect(h.startsWith("$argon2id$")).toBe(true);
    expect(await verify(h, "correct horse battery staple")).toBe(true);
    expect(await verify(h, "wrong")).toBe(false);
  });

  it("runs the generated Prisma client on PGlite", async () => {
    const pg = new PGlite();
    await pg.exec(
      'CREATE TYPE "OrgState" AS ENUM (\'ACTIVE\',\'INACTIVE\'); CREATE TABLE "Instance" (id text primary key, name text not null, "defaultOrgId" text, "createdAt" timestamptz(3) not null default now(), "updatedAt" timestamptz(3) not null)',
    );
    const prisma = new PrismaClient({ adapter: new PrismaPGlite(pg) });
    await prisma.instance.create({ data: { id: "i1", name: "x" } });
    expect(await prisma.instance.count()).toBe(1);
    await prisma.$disconnect();
    await pg.close();
  });
});
