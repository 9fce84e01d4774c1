// A private Apache httpd with mod_auth_openidc (Debian's apache2 and libapache2-mod-auth-openidc) on loopback: a
// relying party no one here wrote, protecting /protected/ with svc as its OpenID Provider. The claims it verified
// come back as response headers of the protected page.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

const HTTPD = "/usr/sbin/apache2";
const MODULES = "/usr/lib/apache2/modules";

export const apacheAvailable = () => existsSync(HTTPD) && existsSync(path.join(MODULES, "mod_auth_openidc.so"));

/** A TCP port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export interface ApacheRp {
  url: string;
  redirectUri: string;
  stop(): Promise<void>;
  errorLog(): Promise<string>;
}

export interface RpSettings {
  metadataUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string;
  /** The port to listen on (the redirect URI registered with svc names it); a free one when unset. */
  port?: number;
}

export async function startApacheRp(rp: RpSettings): Promise<ApacheRp> {
  const port = rp.port ?? (await freePort());
  const dir = await mkdtemp(path.join(tmpdir(), "svc-apache-"));
  const www = path.join(dir, "www");
  await mkdir(path.join(www, "protected"), { recursive: true });
  await writeFile(path.join(www, "protected", "index.html"), "<!doctype html><title>protected</title><p>protected page</p>\n");
  await writeFile(path.join(www, "index.html"), "<!doctype html><title>public</title><p>signed out</p>\n");
  const url = `http://127.0.0.1:${port}`;
  const redirectUri = `${url}/protected/redirect_uri`;
  const conf = [
    `ServerRoot ${dir}`,
    "ServerName 127.0.0.1",
    `Listen 127.0.0.1:${port}`,
    `PidFile ${dir}/httpd.pid`,
    `ErrorLog ${dir}/error.log`,
    "LogLevel warn auth_openidc:info",
    `DefaultRuntimeDir ${dir}`,
    "User www-data",
    "Group www-data",
    ...["mpm_event", "authz_core", "authz_user", "authn_core", "mime", "dir", "headers", "auth_openidc"].map(
      (m) => `LoadModule ${m}_module ${MODULES}/mod_${m}.so`,
    ),
    "TypesConfig /etc/mime.types",
    `DocumentRoot ${www}`,
    "DirectoryIndex index.html",
    `<Directory ${www}>`,
    "  Require all granted",
    "</Directory>",
    `OIDCProviderMetadataURL ${rp.metadataUrl}`,
    `OIDCClientID ${rp.clientId}`,
    `OIDCClientSecret ${rp.clientSecret}`,
    `OIDCRedirectURI ${redirectUri}`,
    "OIDCCryptoPassphrase svc-test-passphrase-not-a-secret",
    `OIDCScope "${rp.scope}"`,
    "OIDCPKCEMethod S256",
    "OIDCProviderTokenEndpointAuth client_secret_basic",
    "OIDCSessionInactivityTimeout 300",
    `OIDCCacheDir ${dir}`,
    "<Location /protected>",
    "  AuthType openid-connect",
    "  Require valid-user",
    '  Header always set X-Oidc-Sub "%{OIDC_CLAIM_sub}e"',
    '  Header always set X-Oidc-Email "%{OIDC_CLAIM_email}e"',
    '  Header always set X-Oidc-Amr "%{OIDC_CLAIM_amr}e"',
    "</Location>",
  ].join("\n");
  await writeFile(path.join(dir, "httpd.conf"), `${conf}\n`);
  // Apache drops to www-data, which must read the pages and write its cache and runtime files.
  await new Promise<void>((resolve, reject) => {
    const chown = spawn("chown", ["-R", "www-data:www-data", dir]);
    chown.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`chown exited ${code}`))));
  });
  const child: ChildProcess = spawn(HTTPD, ["-f", path.join(dir, "httpd.conf"), "-DFOREGROUND"], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (d) => {
    output += d;
  });
  child.stderr?.on("data", (d) => {
    output += d;
  });
  const errorLog = async () => `${output}${await readFile(path.join(dir, "error.log"), "utf8").catch(() => "")}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`apache2 exited ${child.exitCode}: ${await errorLog()}`);
    const up = await fetch(`${url}/`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (i > 100) throw new Error(`apache2 did not answer: ${await errorLog()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    redirectUri,
    errorLog,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
