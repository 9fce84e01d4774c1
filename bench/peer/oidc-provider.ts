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
// resource, scope, signIn? }.
//
// With signIn, a second client signs users in with the authorization code flow (PKCE, client_secret_basic, refresh
// tokens rotated on every use, an ID token on refresh as svc gives one) through a login-API shim in the place of
// svc's login API: POST /interaction/<uid>/login with {"loginName", "password"} (the password compared as plain
// text: the peer's login costs nothing, so that what is compared is the protocol work) finishes the interaction with
// the account and a grant of the requested scopes; later authorizations on the same browser session are answered
// with a code straight away (single sign-on), as svc answers them once the login UI links the existing session.
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
  signIn?: SignInClient;
}

/** The sign-in client of the peer and its one user. */
export interface SignInClient {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  loginName: string;
  password: string;
}

/** What the shim uses of oidc-provider (it ships no types; test/support/oidc-provider.d.ts declares less). */
interface ShimProvider {
  callback(): (req: http.IncomingMessage, res: http.ServerResponse) => void;
  interactionDetails(req: http.IncomingMessage, res: http.ServerResponse): Promise<{ params: { client_id: string; scope: string } }>;
  interactionFinished(req: http.IncomingMessage, res: http.ServerResponse, result: unknown): Promise<void>;
  Grant: new (o: { accountId: string; clientId: string }) => { addOIDCScope(scope: string): void; save(): Promise<string> };
}

/** oidc-provider's configuration for the bench: only what the two scenarios use, everything else left at its default. */
function configuration(s: PeerSettings, pool: pg.Pool | undefined): Record<string, unknown> {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const signIn = s.signIn;
  return {
    clients: [
      ...(signIn
        ? [
            {
              client_id: signIn.clientId,
              client_secret: signIn.clientSecret,
              grant_types: ["authorization_code", "refresh_token"],
              response_types: ["code"],
              redirect_uris: [signIn.redirectUri],
              token_endpoint_auth_method: "client_secret_basic",
            },
          ]
        : []),
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
        // Only the token service's client gets the resource (its tokens have an audience); sign-ins get plain opaque tokens.
        defaultResource: (_ctx: unknown, client: { clientId: string }) => (client.clientId === s.clientId ? s.resource : undefined),
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (resource !== s.resource) throw new Error("unknown resource");
          return { scope: s.scope, audience: s.resource, accessTokenFormat: "opaque", accessTokenTTL: s.ttlSeconds };
        },
      },
    },
    ttl: { ClientCredentials: s.ttlSeconds },
    scopes: [s.scope, "openid", "profile", "email", "offline_access"],
    claims: { openid: ["sub"], profile: ["name", "given_name", "family_name", "preferred_username"], email: ["email", "email_verified"] },
    pkce: { required: () => true },
    // As svc: a refresh token with every code of a client allowed the grant, a new one on every refresh.
    issueRefreshToken: () => true,
    rotateRefreshToken: () => true,
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx: unknown, sub: string) => ({
      accountId: sub,
      claims: () => ({
        sub,
        name: "Bench Signer",
        given_name: "Bench",
        family_name: "Signer",
        preferred_username: signIn?.loginName,
        email: `${signIn?.loginName}@example.com`,
        email_verified: true,
      }),
    }),
    jwks: { keys: [{ ...privateKey.export({ format: "jwk" }), kid: "bench", use: "sig", alg: "RS256" }] },
    cookies: { keys: ["svc-bench-peer-cookie-key"] },
    ...(pool ? { adapter: (model: string) => new PgAdapter(pool, model) } : {}),
  };
}

/** The login-API shim: checks the login name and password (plain text) and finishes the interaction with a grant. */
async function login(provider: ShimProvider, s: SignInClient, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { loginName?: string; password?: string };
  if (body.loginName !== s.loginName || body.password !== s.password) {
    res.writeHead(401, { "content-type": "text/plain" }).end("wrong login name or password");
    return;
  }
  const details = await provider.interactionDetails(req, res);
  const grant = new provider.Grant({ accountId: s.loginName, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId: s.loginName }, consent: { grantId } });
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
  const provider = new Provider(url, configuration(settings, pool)) as unknown as ShimProvider;
  const callback = provider.callback();
  server.on("request", (req, res) => {
    if (settings.signIn && req.method === "POST" && req.url?.startsWith("/interaction/")) {
      login(provider, settings.signIn, req, res).catch((err: unknown) => {
        res.writeHead(400, { "content-type": "text/plain" }).end(String(err));
      });
      return;
    }
    callback(req, res);
  });
  // The parent ends this process; should it die first, stdin closes and this process follows.
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
  process.stdout.write(`${JSON.stringify({ url })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`oidc-provider peer: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
