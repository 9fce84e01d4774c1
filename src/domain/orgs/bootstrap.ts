// First start: the instance, its default organization, the human admin and
// a machine user holding IAM_OWNER whose PAT is written to a file. Runs under
// the start-up lock, so replicas starting together bootstrap exactly once.
// Everything is created by the operations the API runs (CreateOrganization's
// insert, the user insert, instance members, AddPersonalAccessToken), acting
// as no one. At every start (ensureConsoleClient) the admin console's OIDC
// client exists in the default organization's console project, with the
// redirect URIs of the current external URL: databases bootstrapped before
// the console existed, and the build's snapshot (no instance yet), get it too.
import { randomInt } from "node:crypto";
import type { Logger } from "pino";
import type { Config } from "../../config.js";
import type { Store } from "../../store/index.js";
import { type AppSettings, createApp, listApps, updateApp } from "../access/apps.js";
import { createProject, listProjects } from "../access/projects.js";
import { recordEvent } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { addPersonalAccessToken } from "../identity/pats.js";
import { insertUser, type PreparedUser, prepareUser } from "../identity/users.js";
import { newId } from "../ids.js";
import { systemContext } from "../request-context.js";
import { checkPassword, DEFAULT_PASSWORD_COMPLEXITY } from "../settings/settings.js";
import { IAM_OWNER, iamOwnersLock, insertInstanceMember, lockTx, ORG_OWNER } from "./memberships.js";
import { insertOrganization, type PreparedOrg, prepareOrganization } from "./org-create.js";
import { orgSlug } from "./orgs.js";

export interface BootstrapResult {
  instanceId: string;
  created: boolean;
  /** The admin console's OIDC client (absent when the instance has no default organization). */
  console?: ConsoleClient;
}

export interface ConsoleClient {
  clientId: string;
  /** The first human administrator's login name, while that user exists (the readiness log line names it). */
  adminLoginName?: string;
}

export type BootstrapConfig = Pick<Config, "instanceName" | "defaultOrgName" | "adminPassword" | "externalUrl" | "firstInstancePatPath">;

/** Where the service account's PAT goes: written inside the bootstrap transaction, removed if it fails. */
export interface PatFile {
  write(content: string): Promise<void>;
  remove(): Promise<void>;
}

/**
 * Creates the instance unless one exists. The PAT is written before the commit: if the file cannot be written,
 * nothing is created and the next start retries.
 */
export async function bootstrapInstance(store: Store, config: BootstrapConfig, log: Logger, now: Date, patFile: PatFile): Promise<BootstrapResult> {
  const existing = await store.orgs.firstInstance();
  if (existing) return { instanceId: existing.id, created: false, console: await ensureConsoleClient(store, config, log, now, existing.id) };

  const password = adminPassword(config);
  const ctx = firstStartCtx(store, newId(), log, now);
  const plan = await prepare(ctx, config, password);
  try {
    await store.transaction(
      async (tx) => {
        await create(ctx, tx, config, plan);
        const { token } = await addPersonalAccessToken(within(ctx, tx), plan.machine.data.id as string);
        await patFile.write(`${token}\n`);
        // A first start happens once: on a busy machine its one transaction may take longer than a request's 5 s.
      },
      { timeout: 60_000 },
    );
  } catch (err) {
    await patFile.remove().catch(() => {});
    throw err;
  }
  announce(log, config, ctx.instanceId, plan.org.id, config.adminPassword === undefined ? password : undefined);
  return { instanceId: ctx.instanceId, created: true, console: await ensureConsoleClient(store, config, log, now, ctx.instanceId) };
}

export const CONSOLE_PROJECT = "svc console";
export const CONSOLE_APP = "Console";
export const CONSOLE_PATH = "/ui/console";

/** The console's client: a SPA (public client, code + PKCE) with rotating refresh tokens, at the external URL. */
export function consoleClientSettings(externalUrl: string): AppSettings {
  const base = `${externalUrl.replace(/\/+$/, "")}${CONSOLE_PATH}`;
  return {
    kind: "oidc",
    appType: "user_agent",
    authMethod: "none",
    accessTokenType: "BEARER",
    redirectUris: [`${base}/callback`],
    postLogoutRedirectUris: [`${base}/signed-out`],
    grantTypes: ["authorization_code", "refresh_token"],
    responseTypes: ["code"],
    idTokenRoleAssertion: false,
    idTokenUserinfoAssertion: true,
    // Plain http is only for development (the default external URL is http://localhost:8080).
    devMode: !base.startsWith("https:"),
  };
}

/**
 * Creates the console project and client in the default organization unless they exist, and brings the client's
 * URIs to the current external URL. Idempotent; runs under the start-up lock like the bootstrap.
 */
export async function ensureConsoleClient(
  store: Store,
  config: BootstrapConfig,
  log: Logger,
  now: Date,
  instanceId: string,
): Promise<ConsoleClient | undefined> {
  const instance = await store.orgs.instance(instanceId);
  const orgId = instance?.defaultOrgId;
  if (!orgId) return undefined;
  const ctx = firstStartCtx(store, instanceId, log, now);
  const named = (value: string) => ({ kind: "name" as const, match: { method: "equals" as const, ignoreCase: false, value } });
  const projects = await listProjects(ctx, { queries: [{ kind: "org", orgId }, named(CONSOLE_PROJECT)], page: { limit: 1 } });
  const projectId = projects.projects[0]?.id ?? (await createProject(ctx, { orgId, name: CONSOLE_PROJECT })).id;
  const settings = consoleClientSettings(config.externalUrl);
  const apps = await listApps(ctx, { projectId, queries: [named(CONSOLE_APP)], page: { limit: 1 } });
  const app = apps.apps[0];
  let clientId: string;
  if (!app) {
    clientId = (await createApp(ctx, { projectId, name: CONSOLE_APP, settings })).clientId;
    log.info({ clientId }, `created the admin console's OIDC client in project "${CONSOLE_PROJECT}"`);
  } else {
    clientId = app.clientId;
    const current = app.config.kind === "oidc" ? app.config : undefined;
    const wanted = settings.kind === "oidc" ? settings : undefined;
    if (JSON.stringify([current?.redirectUris, current?.postLogoutRedirectUris]) !== JSON.stringify([wanted?.redirectUris, wanted?.postLogoutRedirectUris])) {
      await updateApp(ctx, { projectId, appId: app.id, settings });
      log.info({ clientId }, "moved the admin console's OIDC client to the external URL");
    }
  }
  const org = await store.orgs.find(instanceId, orgId);
  const adminLoginName = org && (await store.users.usernameTaken(instanceId, "admin", "")) ? `admin@${org.primaryDomain}` : undefined;
  return { clientId, ...(adminLoginName ? { adminLoginName } : {}) };
}

/** SVC_ADMIN_PASSWORD, refused unless the default complexity policy accepts it; else a generated one. */
function adminPassword(config: BootstrapConfig): string {
  if (config.adminPassword === undefined) return generatePassword();
  try {
    checkPassword(config.adminPassword, DEFAULT_PASSWORD_COMPLEXITY);
  } catch (err) {
    throw new Error(`SVC_ADMIN_PASSWORD: ${(err as Error).message}`);
  }
  return config.adminPassword;
}

/** The first start is svc's own action (request-context.ts): the system principal, with an IAM_OWNER's rights, which the operations it reuses check. */
function firstStartCtx(store: Store, instanceId: string, log: Logger, now: Date): Ctx {
  return systemContext({ store, instanceId, clock: () => now, log }, { requestId: "bootstrap" }, [IAM_OWNER]);
}

/** TRANSITIONAL: the context of an operation that reads through ctx inside the bootstrap transaction. */
function within(ctx: Ctx, tx: Store): Ctx {
  return { ...ctx, store: tx };
}

interface Plan {
  org: PreparedOrg;
  machine: PreparedUser;
}

/** Validates and hashes before the transaction, as CreateOrganization does. */
async function prepare(ctx: Ctx, config: BootstrapConfig, password: string): Promise<Plan> {
  const domainHost = new URL(config.externalUrl).hostname;
  // The organization is the instance's first: its primary domain is the slug's, with no suffix.
  const email = `admin@${orgSlug(config.defaultOrgName)}.${domainHost}`;
  const org = await prepareOrganization(ctx, {
    name: config.defaultOrgName,
    domainHost,
    admins: [
      {
        username: "admin",
        roles: [ORG_OWNER],
        human: {
          givenName: "Instance",
          familyName: "Administrator",
          displayName: "Instance Administrator",
          email,
          emailVerified: true,
          // A generated password was printed to the log: it must be replaced at first sign-in.
          password: { password, changeRequired: config.adminPassword === undefined },
        },
      },
    ],
  });
  const machine = await prepareUser(
    ctx,
    {
      orgId: org.id,
      username: "svc-admin",
      machine: { name: "svc-admin", description: "Instance administrator service account created at the first start", accessTokenType: "BEARER" },
    },
    org.id,
  );
  return { org, machine };
}

async function create(ctx: Ctx, tx: Store, config: BootstrapConfig, plan: Plan): Promise<void> {
  const now = ctx.clock();
  await tx.orgs.insertInstance({ id: ctx.instanceId, name: config.instanceName, defaultOrgId: plan.org.id, createdAt: now });
  await recordEvent(ctx, tx, { aggregateType: "instance", aggregateId: ctx.instanceId, type: "instance.added", payload: { name: config.instanceName } });
  const [admin] = await insertOrganization(ctx, tx, plan.org, now);
  await insertUser(ctx, tx, plan.machine);
  await lockTx(tx, iamOwnersLock(ctx.instanceId));
  for (const userId of [admin as string, plan.machine.data.id as string]) await insertInstanceMember(ctx, tx, userId, [IAM_OWNER], now);
}

function announce(log: Logger, config: BootstrapConfig, instanceId: string, orgId: string, generatedPassword: string | undefined): void {
  const patPath = config.firstInstancePatPath;
  log.info(
    { instanceId, orgId, patPath },
    `first start: created instance "${config.instanceName}" with organization "${config.defaultOrgName}". ` +
      `The IAM_OWNER personal access token of the service account "svc-admin" is in ${patPath}; ` +
      `call the API with: curl -H "Authorization: Bearer $(cat ${patPath})" -X POST ${config.externalUrl}/v2/users`,
  );
  if (generatedPassword !== undefined) {
    log.warn({ username: "admin" }, `generated password of the human administrator "admin" (shown once, change it at first sign-in): ${generatedPassword}`);
  }
}

/** 24 characters drawn from all four classes, so the default complexity policy always accepts it. */
function generatePassword(): string {
  const classes = ["ABCDEFGHJKLMNPQRSTUVWXYZ", "abcdefghijkmnopqrstuvwxyz", "23456789", "!#%+-=?@_"];
  const all = classes.join("");
  const chars = classes.map((c) => c[randomInt(c.length)] as string);
  while (chars.length < 24) chars.push(all[randomInt(all.length)] as string);
  for (let i = chars.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [chars[i], chars[j]] = [chars[j] as string, chars[i] as string];
  }
  return chars.join("");
}
