import type { Logger } from "pino";
import type { PrismaClient } from "../store/db.js";

export type InstanceRole = "IAM_OWNER" | "IAM_OWNER_VIEWER";
export type OrgRole = "ORG_OWNER" | "ORG_USER_MANAGER" | "ORG_PROJECT_PERMISSION_MANAGER" | "ORG_AUDITOR";

/** Who is calling: resolved from the bearer token by the authenticator. */
export interface Principal {
  userId: string;
  instanceId: string;
  /** The organization the user belongs to. */
  orgId: string;
  userType: "HUMAN" | "MACHINE";
  instanceRoles: readonly string[];
  /** Roles per organization id. */
  orgRoles: ReadonlyMap<string, readonly string[]>;
  /** Id of the credential used (PAT id), for audit. */
  credentialId: string;
}

export type Clock = () => Date;

/** Everything a domain function needs; built per request by each adapter. */
export interface Ctx {
  db: PrismaClient;
  instanceId: string;
  principal: Principal;
  clock: Clock;
  log: Logger;
  requestId: string;
}

export type Tx = Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0];
