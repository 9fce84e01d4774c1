// First start: the instance, its default organization, the human admin and
// a machine user holding IAM_OWNER whose PAT is written to a file. Runs under
// the start-up lock, so replicas starting together bootstrap exactly once.
import { randomInt } from "node:crypto";
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import type { Config } from "../../config.js";
import { hashPassword } from "../../crypto/passwords.js";
import { newOpaqueToken, sha256 } from "../../crypto/tokens.js";
import type { PrismaClient } from "../../store/db.js";
import { newId } from "../ids.js";
import { checkPassword, DEFAULT_PASSWORD_COMPLEXITY } from "../settings/settings.js";

export interface BootstrapResult {
  instanceId: string;
  created: boolean;
}

export async function bootstrap(db: PrismaClient, config: Config, log: Logger, now: Date): Promise<BootstrapResult> {
  const existing = await db.instance.findFirst({ orderBy: { createdAt: "asc" }, select: { id: true } });
  if (existing) return { instanceId: existing.id, created: false };

  if (config.adminPassword !== undefined) {
    try {
      checkPassword(config.adminPassword, DEFAULT_PASSWORD_COMPLEXITY);
    } catch (err) {
      throw new Error(`SVC_ADMIN_PASSWORD: ${(err as Error).message}`);
    }
  }
  const password = config.adminPassword ?? generatePassword();
  const passwordHash = await hashPassword(password);
  const token = newOpaqueToken();
  const instanceId = newId();
  const orgId = newId();
  const adminId = newId();
  const machineId = newId();
  const domain = `${slug(config.defaultOrgName)}.${new URL(config.externalUrl).hostname}`;
  const event = (aggregateType: string, aggregateId: string, type: string, orgIdOf: string | null, payload: object = {}) => ({
    id: newId(),
    instanceId,
    orgId: orgIdOf,
    aggregateType,
    aggregateId,
    type,
    payload,
    createdAt: now,
  });

  await db
    .$transaction(async (tx) => {
      await tx.instance.create({ data: { id: instanceId, name: config.instanceName, defaultOrgId: orgId, createdAt: now, updatedAt: now } });
      await tx.organization.create({ data: { id: orgId, instanceId, name: config.defaultOrgName, primaryDomain: domain, createdAt: now, updatedAt: now } });
      await tx.user.create({
        data: {
          id: adminId,
          instanceId,
          orgId,
          type: "HUMAN",
          username: "admin",
          usernameLower: "admin",
          givenName: "Instance",
          familyName: "Administrator",
          displayName: "Instance Administrator",
          email: `admin@${domain}`,
          emailVerified: true,
          passwordHash,
          // A generated password was printed to the log: it must be replaced at first sign-in.
          passwordChangeRequired: config.adminPassword === undefined,
          passwordChangedAt: now,
          createdAt: now,
          updatedAt: now,
        },
      });
      // The v2 email is the primary entry of the SCIM emails list.
      await tx.userEmail.create({ data: { id: newId(), userId: adminId, position: 0, value: `admin@${domain}`, primary: true } });
      await tx.user.create({
        data: {
          id: machineId,
          instanceId,
          orgId,
          type: "MACHINE",
          username: "svc-admin",
          usernameLower: "svc-admin",
          machineName: "svc-admin",
          description: "Instance administrator service account created at the first start",
          createdAt: now,
          updatedAt: now,
        },
      });
      await tx.instanceMember.createMany({
        data: [
          { instanceId, userId: adminId, roles: ["IAM_OWNER"], createdAt: now, updatedAt: now },
          { instanceId, userId: machineId, roles: ["IAM_OWNER"], createdAt: now, updatedAt: now },
        ],
      });
      await tx.orgMember.create({ data: { orgId, userId: adminId, roles: ["ORG_OWNER"], createdAt: now, updatedAt: now } });
      const patId = newId();
      await tx.personalAccessToken.create({ data: { id: patId, instanceId, userId: machineId, tokenHash: sha256(token), createdAt: now } });
      await tx.event.createMany({
        data: [
          event("instance", instanceId, "instance.added", null, { name: config.instanceName }),
          event("org", orgId, "org.added", orgId, { name: config.defaultOrgName }),
          event("user", adminId, "user.human.added", orgId, { username: "admin" }),
          event("user", machineId, "user.machine.added", orgId, { username: "svc-admin" }),
          event("instance", instanceId, "instance.member.added", null, { userId: adminId, roles: ["IAM_OWNER"] }),
          event("instance", instanceId, "instance.member.added", null, { userId: machineId, roles: ["IAM_OWNER"] }),
          event("org", orgId, "org.member.added", orgId, { userId: adminId, roles: ["ORG_OWNER"] }),
          event("user", machineId, "user.pat.added", orgId, { tokenId: patId }),
        ],
      });
      // Written before the commit: if the file cannot be written, nothing is created and the next start retries.
      await writeSecretFile(config.firstInstancePatPath, `${token}\n`);
    })
    .catch(async (err) => {
      await rm(config.firstInstancePatPath, { force: true }).catch(() => {});
      throw err;
    });

  log.info(
    { instanceId, orgId, patPath: config.firstInstancePatPath },
    `first start: created instance "${config.instanceName}" with organization "${config.defaultOrgName}". ` +
      `The IAM_OWNER personal access token of the service account "svc-admin" is in ${config.firstInstancePatPath}; ` +
      `call the API with: curl -H "Authorization: Bearer $(cat ${config.firstInstancePatPath})" -X POST ${config.externalUrl}/v2/users`,
  );
  if (config.adminPassword === undefined) {
    log.warn({ username: "admin" }, `generated password of the human administrator "admin" (shown once, change it at first sign-in): ${password}`);
  }
  return { instanceId, created: true };
}

async function writeSecretFile(file: string, content: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFile(file, content, { mode: 0o600 });
  // writeFile keeps the mode of a file that already existed.
  await chmod(file, 0o600);
}

function slug(name: string): string {
  const s = name
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return s || "org";
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
