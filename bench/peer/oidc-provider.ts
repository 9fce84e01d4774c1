// The peer of `npm run bench -- --peer oidc-provider`: panva's oidc-provider (certified OP) in a process of its own,
// configured as close to svc's token service as it allows, listening on a random port of 127.0.0.1. It prints one
// JSON line ({"url": ...}) once it serves, and runs until its parent ends it (or goes away).
//
// Closeness to svc: one confidential client authenticating with client_secret_basic; the client_credentials grant
// giving an opaque access token (formats.AccessToken "opaque" through the resource server's accessTokenFormat) with
// an audience (a resource indicator, defaulted as svc defaults its audience) and a scope; introspection enabled
// (RFC 7662, the caller authenticated like svc's); the same lifetime as svc's client credentials tokens; its own
// RS256 key (not the development keys). The adapter is the in-memory default or, for "tokens persisted", the
// PostgreSQL adapter of ./pg-adapter.ts on the bench database with a pool as large as svc's.
//
// SVC_PEER (JSON): { adapter: "memory" | "postgres", databaseUrl?, poolSize, clientId, clientSecret, ttlSeconds,
// resource, scope }.
import { generateKeyPairSync } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { PgAdapter, preparePeerTable } from "./pg-adapter.js";

export interface PeerSettings {
  adapter: "memory" | "postgres";
  databaseUrl?: string;
  poolSize: number;
  clientId: string;
  clientSecret: string;
  ttlSeconds: number;
  /** The resource indicator (the token's audience) and the one scope it offers. */
  resource: string;
  scope: string;
}

/** oidc-provider's configuration for the bench: only what the two scenarios use, everything else left at its default. */
function configuration(s: PeerSettings, pool: pg.Pool | undefined): Record<string, unknown> {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    clients: [
      {
        client_id: s.clientId,
        client_secret: s.clientSecret,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
        scope: s.scope,
      },
    ],
    features: {
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => s.resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (resource !== s.resource) throw new Error("unknown resource");
          return { scope: s.scope, audience: s.resource, accessTokenFormat: "opaque", accessTokenTTL: s.ttlSeconds };
        },
      },
    },
    ttl: { ClientCredentials: s.ttlSeconds },
    scopes: [s.scope],
    jwks: { keys: [{ ...privateKey.export({ format: "jwk" }), kid: "bench", use: "sig", alg: "RS256" }] },
    cookies: { keys: ["svc-bench-peer-cookie-key"] },
    ...(pool ? { adapter: (model: string) => new PgAdapter(pool, model) } : {}),
  };
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.env.SVC_PEER ?? "") as PeerSettings;
  // oidc-provider warns about Node 20 and (rightly) about its development adapter; neither belongs on the bench's output.
  for (const level of ["warn", "info"] as const) {
    const original = console[level].bind(console);
    console[level] = (...args: unknown[]) => {
      if (!String(args[0]).startsWith("oidc-provider ")) original(...args);
    };
  }
  const { default: Provider } = await import("oidc-provider");
  let pool: pg.Pool | undefined;
  if (settings.adapter === "postgres") {
    if (!settings.databaseUrl) throw new Error("the postgres adapter needs databaseUrl");
    pool = new pg.Pool({ connectionString: settings.databaseUrl, max: settings.poolSize });
    await preparePeerTable(pool);
  }
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(url, configuration(settings, pool));
  server.on("request", provider.callback());
  // The parent ends this process; should it die first, stdin closes and this process follows.
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
  process.stdout.write(`${JSON.stringify({ url })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`oidc-provider peer: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
