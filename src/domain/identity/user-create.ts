// CreateUser (v2, SCIM, an organization's first admins): validate and hash
// outside any transaction, then one insert statement.
import { checkImportedHash } from "../../crypto/passwords.js";
import type { Store } from "../../store/index.js";
import type { NewUser, NewUserRow } from "../../store/users.js";
import { eventRow } from "../audit/events.js";
import type { Ctx } from "../context.js";
import { invalidArgument } from "../errors.js";
import { ID_PATTERN, newId } from "../ids.js";
import { orgNotFound } from "../orgs/orgs.js";
import { type ProfileRows, type ScimProfile, scimProfileColumns } from "./scim-profile.js";
import { text, validateUsername, validEmail, validExternalId, validLanguage, validMetadata, validPhone } from "./user-input.js";
import { hashNewPassword } from "./user-passwords.js";
import { authorizeUserCreate } from "./user-register.js";
import { claimUsername } from "./usernames.js";

export interface CreateUserInput {
  orgId: string;
  userId?: string;
  username?: string;
  human?: {
    givenName: string;
    familyName: string;
    nickName?: string;
    displayName?: string;
    preferredLanguage?: string;
    gender?: number;
    email: string;
    emailVerified: boolean;
    phone?: string;
    phoneVerified?: boolean;
    password?: { password: string; changeRequired: boolean };
    hashedPassword?: { hash: string; changeRequired: boolean };
  };
  machine?: { name: string; description?: string; accessTokenType: "BEARER" | "JWT" };
  metadata?: { key: string; value: Uint8Array }[];
  /**
   * A SCIM provisioning create: the profile is the SCIM one (names and the
   * email become optional, the multi-valued attributes replace email/phone).
   */
  scim?: ScimProfile & { active: boolean; externalId?: string | null; provisionerId: string; password?: string };
}

/** A validated new user, ready for insertUser. */
export type PreparedUser = Omit<NewUser, "event">;

export async function createUser(ctx: Ctx, input: CreateUserInput): Promise<{ id: string; createdAt: Date; prepared: PreparedUser }> {
  if (!input.orgId) throw invalidArgument("Errors.User.Org.Missing", "organization_id is required", { field: "organization_id" });
  await authorizeUserCreate(ctx, input);
  const prepared = await prepareUser(ctx, input, input.orgId);
  // One statement, atomic on its own; it also checks that the organization exists.
  await insertUser(ctx, undefined, prepared);
  return { id: prepared.data.id, createdAt: prepared.data.createdAt, prepared };
}

/** What a kind of user adds to the common row. */
type Kind = Omit<PreparedUser, "data" | "metadata"> & { data: Omit<NewUserRow, "id" | "instanceId" | "orgId" | "usernameLower" | "createdAt" | "updatedAt"> };

/**
 * Validates a new user and hashes its password: the slow part, kept out of
 * any transaction. Checks no permission: callers authorize first.
 */
export async function prepareUser(ctx: Ctx, input: CreateUserInput, orgId: string): Promise<PreparedUser> {
  if ([input.human, input.machine, input.scim].filter(Boolean).length !== 1) {
    throw invalidArgument("Errors.User.Type.Missing", "exactly one of human or machine is required");
  }
  if (input.userId !== undefined && !ID_PATTERN.test(input.userId)) {
    throw invalidArgument("Errors.User.Id.Invalid", "user_id must be 1-200 characters of letters, digits, '_', '.', '@' or '-'", { field: "user_id" });
  }
  const id = input.userId ?? newId();
  const now = ctx.clock();
  let kind: Kind;
  if (input.scim) kind = await scimUser(ctx, input.scim, input.username, orgId, now);
  else if (input.human) kind = await humanUser(ctx, input.human, input.username, orgId, now);
  else kind = machineUser(input.machine as NonNullable<CreateUserInput["machine"]>, input.username);
  const data: NewUserRow = {
    id,
    instanceId: ctx.instanceId,
    orgId,
    ...kind.data,
    usernameLower: kind.data.username.toLowerCase(),
    createdAt: now,
    updatedAt: now,
  };
  const metadata = validMetadata(input.metadata ?? []);
  return { data, metadata, rows: kind.rows, externalId: kind.externalId };
}

async function scimUser(ctx: Ctx, sc: NonNullable<CreateUserInput["scim"]>, username: string | undefined, orgId: string, now: Date): Promise<Kind> {
  const { columns, rows } = scimProfileColumns(sc);
  const data: Kind["data"] = {
    type: "HUMAN",
    ...columns,
    // The provisioner holds user.write, which is what marks an address as verified in the v2 API too.
    emailVerified: columns.email != null,
    username: validateUsername(username ?? ""),
  };
  if (sc.password !== undefined) {
    data.passwordHash = await hashNewPassword(ctx, orgId, sc.password);
    data.passwordChangedAt = now;
  }
  data.state = !sc.active ? "INACTIVE" : data.passwordHash ? "ACTIVE" : "INITIAL";
  const ext = validExternalId(sc.externalId);
  return { data, rows, externalId: ext ? { provisionerId: sc.provisionerId, externalId: ext } : undefined };
}

async function humanUser(ctx: Ctx, h: NonNullable<CreateUserInput["human"]>, username: string | undefined, orgId: string, now: Date): Promise<Kind> {
  const givenName = text(h.givenName, "given_name", { required: true });
  const familyName = text(h.familyName, "family_name", { required: true });
  const data: Kind["data"] = {
    type: "HUMAN",
    username: "",
    givenName,
    familyName,
    nickName: text(h.nickName, "nick_name"),
    displayName: text(h.displayName, "display_name") ?? `${givenName} ${familyName}`,
    preferredLanguage: validLanguage(h.preferredLanguage ?? ""),
    gender: h.gender ?? 0,
  };
  const email = validEmail(h.email, "email");
  data.email = email;
  data.emailVerified = h.emailVerified;
  if (h.phone !== undefined) {
    data.phone = validPhone(h.phone);
    data.phoneVerified = h.phoneVerified ?? false;
  }
  Object.assign(data, await humanPassword(ctx, h, orgId, now));
  data.username = validateUsername(username ?? email);
  // A human without a password cannot sign in until one is set.
  data.state = data.passwordHash ? "ACTIVE" : "INITIAL";
  // The v2 email and phone are the primary entries of the SCIM emails / phoneNumbers.
  const rows: ProfileRows = { emails: [], phoneNumbers: [], addresses: [] };
  rows.emails.push({ id: newId(), position: 0, value: email, type: null, display: null, primary: true });
  if (data.phone) rows.phoneNumbers.push({ id: newId(), position: 0, value: data.phone, type: null, display: null, primary: true });
  return { data, rows };
}

/** A v2 human's initial password: a new one (checked and hashed) or an imported hash. */
async function humanPassword(
  ctx: Ctx,
  h: NonNullable<CreateUserInput["human"]>,
  orgId: string,
  now: Date,
): Promise<Pick<NewUserRow, "passwordHash" | "passwordChangeRequired" | "passwordChangedAt">> {
  if (h.password && h.hashedPassword) throw invalidArgument("Errors.User.Password.Ambiguous", "give either password or hashed_password");
  if (h.password) {
    return { passwordHash: await hashNewPassword(ctx, orgId, h.password.password), passwordChangeRequired: h.password.changeRequired, passwordChangedAt: now };
  }
  if (!h.hashedPassword) return {};
  const imported = checkImportedHash(h.hashedPassword.hash);
  if ("refused" in imported && imported.refused === "unsupported") {
    throw invalidArgument(
      "Errors.User.Password.HashUnsupported",
      "hashed_password must be an argon2, bcrypt, scrypt or PBKDF2 hash in PHC or modular crypt format",
      { field: "hashed_password" },
    );
  }
  if ("refused" in imported) {
    // Verifying it would pin a thread for seconds (or take a GiB) at every sign-in: see SVC_PASSWORD_HASH_MAX_*.
    throw invalidArgument("Errors.User.Password.HashCostTooHigh", `hashed_password is too costly to verify: ${imported.reason}`, {
      field: "hashed_password",
    });
  }
  return { passwordHash: h.hashedPassword.hash, passwordChangeRequired: h.hashedPassword.changeRequired, passwordChangedAt: now };
}

function machineUser(m: NonNullable<CreateUserInput["machine"]>, username: string | undefined): Kind {
  if (username === undefined) throw invalidArgument("Errors.User.Username.Missing", "username is required for a machine user", { field: "username" });
  return {
    data: {
      type: "MACHINE",
      username: validateUsername(username),
      machineName: text(m.name, "name", { required: true }),
      description: text(m.description, "description", { max: 500 }),
      accessTokenType: m.accessTokenType,
    },
    rows: { emails: [], phoneNumbers: [], addresses: [] },
  };
}

/**
 * Writes a prepared user with its child rows and its creation event in one
 * statement (the store's user insert), which also checks that the
 * organization exists. With `tx`, the statement runs in that transaction.
 * When usernames are unique in the instance, the statement says so instead
 * and the name is claimed under its lock first (usernames.ts).
 */
export async function insertUser(ctx: Ctx, tx: Store | undefined, p: PreparedUser): Promise<void> {
  const { data, metadata } = p;
  const event = eventRow(ctx, {
    aggregateType: "user",
    aggregateId: data.id,
    orgId: data.orgId,
    type: data.type === "MACHINE" ? "user.machine.added" : "user.human.added",
    payload: {
      username: data.username,
      email: data.email ?? undefined,
      metadataKeys: metadata.map((m) => m.key),
      ...(p.externalId ? { externalId: p.externalId.externalId, provisionerId: p.externalId.provisionerId } : {}),
    },
  });
  const store = tx ?? ctx.store;
  let outcome = await store.users.insert({ ...p, event });
  if (outcome === "wide") {
    outcome = await store.transaction(async (t) => {
      await claimUsername(ctx, t, data.id, data.usernameLower, { wide: true });
      return t.users.insert({ ...p, event }, true);
    });
  }
  if (outcome === "noOrg") throw orgNotFound();
}
