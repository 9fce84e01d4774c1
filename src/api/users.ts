import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type MetadataQuery, type SearchQuery, UserFieldName } from "../../gen/svc/user/v2/query_pb.js";
import { AccessTokenType, type User, UserSchema, UserState, UserType } from "../../gen/svc/user/v2/user_pb.js";
import type { CreateUserRequest, CreateUserRequest_Human, UpdateUserRequest, UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { invalidArgument } from "../domain/errors.js";
import { addPersonalAccessToken, listPersonalAccessTokens, removePersonalAccessToken } from "../domain/identity/pats.js";
import { addMachineKey, addSecret, listMachineKeys, removeMachineKey, removeSecret } from "../domain/identity/user-credentials.js";
import { deleteUserMetadata, listUserMetadata, setUserMetadata, type UserMetadataQuery } from "../domain/identity/user-metadata.js";
import { setPassword } from "../domain/identity/user-passwords.js";
import { listUsers, type UserQuery, type UserSort } from "../domain/identity/user-query.js";
import { deactivateUser, lockUser, reactivateUser, unlockUser } from "../domain/identity/user-state.js";
import { listUserTokens, revokeUserTokens } from "../domain/identity/user-tokens.js";
import { type CreateUserInput, createUser, deleteUser, getUser, type UpdateUserInput, type UserView, updateUser } from "../domain/identity/users.js";
import { ctxOf } from "./connect.js";
import { changed, createdDetails, dateOpt, deleted, details, enumValue, listDetails, listPage, textMatch, ts, tsOpt } from "./convert.js";
import { userAuthn } from "./user-authn.js";
import { userIdps } from "./user-idps.js";
import { userPermissions } from "./user-permissions.js";

const STATES = { ACTIVE: UserState.ACTIVE, INACTIVE: UserState.INACTIVE, LOCKED: UserState.LOCKED, INITIAL: UserState.INITIAL } as const;
const STATE_FROM: Record<number, UserView["state"]> = {
  [UserState.ACTIVE]: "ACTIVE",
  [UserState.INACTIVE]: "INACTIVE",
  [UserState.LOCKED]: "LOCKED",
  [UserState.INITIAL]: "INITIAL",
};
const TYPE_FROM: Record<number, UserView["type"]> = { [UserType.HUMAN]: "HUMAN", [UserType.MACHINE]: "MACHINE" };
const SORT_FROM: Record<number, UserSort> = {
  [UserFieldName.UNSPECIFIED]: "createdAt",
  [UserFieldName.USER_NAME]: "username",
  [UserFieldName.FIRST_NAME]: "givenName",
  [UserFieldName.LAST_NAME]: "familyName",
  [UserFieldName.NICK_NAME]: "nickName",
  [UserFieldName.DISPLAY_NAME]: "displayName",
  [UserFieldName.EMAIL]: "email",
  [UserFieldName.STATE]: "state",
  [UserFieldName.TYPE]: "type",
  [UserFieldName.CREATION_DATE]: "createdAt",
};

export function toUser(u: UserView): User {
  return create(UserSchema, {
    userId: u.id,
    details: details(u, u.orgId),
    state: STATES[u.state],
    username: u.username,
    loginNames: u.loginNames,
    preferredLoginName: u.preferredLoginName,
    type:
      u.type === "HUMAN"
        ? {
            case: "human",
            value: {
              profile: {
                givenName: u.givenName ?? "",
                familyName: u.familyName ?? "",
                nickName: u.nickName ?? "",
                displayName: u.displayName ?? "",
                preferredLanguage: u.preferredLanguage ?? "",
                gender: u.gender,
              },
              email: { email: u.email ?? "", isVerified: u.emailVerified },
              phone: u.phone ? { phone: u.phone, isVerified: u.phoneVerified } : undefined,
              passwordChangeRequired: u.passwordChangeRequired,
              passwordChanged: tsOpt(u.passwordChangedAt),
            },
          }
        : {
            case: "machine",
            value: {
              name: u.machineName ?? "",
              description: u.description ?? "",
              hasSecret: u.hasSecret,
              accessTokenType: u.accessTokenType === "JWT" ? AccessTokenType.JWT : AccessTokenType.BEARER,
            },
          },
  });
}

function toQuery(q: SearchQuery): UserQuery {
  const v = q.query;
  switch (v.case) {
    case "userNameQuery":
      return { kind: "text", field: "username", match: textMatch(v.value.userName, v.value.method) };
    case "firstNameQuery":
      return { kind: "text", field: "givenName", match: textMatch(v.value.firstName, v.value.method) };
    case "lastNameQuery":
      return { kind: "text", field: "familyName", match: textMatch(v.value.lastName, v.value.method) };
    case "nickNameQuery":
      return { kind: "text", field: "nickName", match: textMatch(v.value.nickName, v.value.method) };
    case "displayNameQuery":
      return { kind: "text", field: "displayName", match: textMatch(v.value.displayName, v.value.method) };
    case "emailQuery":
      return { kind: "text", field: "email", match: textMatch(v.value.emailAddress, v.value.method) };
    case "phoneQuery":
      return { kind: "text", field: "phone", match: textMatch(v.value.number, v.value.method) };
    case "loginNameQuery":
      return { kind: "loginName", match: textMatch(v.value.loginName, v.value.method) };
    case "stateQuery":
      return { kind: "state", state: enumValue(STATE_FROM, v.value.state, "State") };
    case "typeQuery":
      return { kind: "type", type: enumValue(TYPE_FROM, v.value.type, "Type") };
    case "organizationIdQuery":
      return { kind: "org", orgId: v.value.organizationId };
    case "inUserIdsQuery":
      return { kind: "ids", ids: v.value.userIds };
    case "metadataKeyQuery":
      return { kind: "metadataKey", match: textMatch(v.value.key, v.value.method) };
    case "metadataValueQuery":
      return { kind: "metadataValue", value: v.value.value };
    case "orQuery":
      return { kind: "or", queries: v.value.queries.map(toQuery) };
    case "andQuery":
      return { kind: "and", queries: v.value.queries.map(toQuery) };
    case "notQuery":
      if (!v.value.query) throw invalidArgument("Errors.Query.Not.Empty", "not_query needs a query");
      return { kind: "not", query: toQuery(v.value.query) };
    case undefined:
      throw invalidArgument("Errors.Query.Empty", "a search query must set one filter");
  }
}

/** The human part of CreateUser; also the shape of new admins in CreateOrganization. */
export function toHumanInput(h: CreateUserRequest_Human): NonNullable<CreateUserInput["human"]> {
  const pw = h.passwordType;
  return {
    givenName: h.profile?.givenName ?? "",
    familyName: h.profile?.familyName ?? "",
    nickName: h.profile?.nickName,
    displayName: h.profile?.displayName,
    preferredLanguage: h.profile?.preferredLanguage,
    gender: h.profile?.gender,
    email: h.email?.email ?? "",
    emailVerified: h.email?.isVerified ?? false,
    phone: h.phone?.phone,
    phoneVerified: h.phone?.isVerified,
    password: pw.case === "password" ? { password: pw.value.password, changeRequired: pw.value.changeRequired } : undefined,
    hashedPassword: pw.case === "hashedPassword" ? { hash: pw.value.hash, changeRequired: pw.value.changeRequired } : undefined,
  };
}

function toCreateInput(req: CreateUserRequest): CreateUserInput {
  const base = { orgId: req.organizationId, userId: req.userId, username: req.username, metadata: req.metadata.map((m) => ({ key: m.key, value: m.value })) };
  const t = req.userType;
  if (t.case === "human") return { ...base, human: toHumanInput(t.value) };
  if (t.case === "machine") {
    return {
      ...base,
      machine: {
        name: t.value.name,
        description: t.value.description,
        accessTokenType: accessTokenType(t.value.accessTokenType),
      },
    };
  }
  return base;
}

const accessTokenType = (t: AccessTokenType) => (t === AccessTokenType.JWT ? "JWT" : "BEARER");

function toUpdateInput(req: UpdateUserRequest): UpdateUserInput {
  const input: UpdateUserInput = { userId: req.userId, username: req.username };
  const t = req.userType;
  if (t.case === "human") {
    const { profile, email, phone } = t.value;
    input.human = {
      profile: profile && {
        givenName: profile.givenName,
        familyName: profile.familyName,
        nickName: profile.nickName,
        displayName: profile.displayName,
        preferredLanguage: profile.preferredLanguage,
        gender: profile.gender,
      },
      email: email && { email: email.email, isVerified: email.isVerified },
      phone: phone && { phone: phone.phone, isVerified: phone.isVerified },
    };
  } else if (t.case === "machine") {
    const { name, description, accessTokenType: type } = t.value;
    input.machine = { name, description, accessTokenType: type === undefined ? undefined : accessTokenType(type) };
  }
  return input;
}

function toMetadataQuery(q: MetadataQuery): UserMetadataQuery {
  if (q.query.case !== "keyQuery") throw invalidArgument("Errors.Query.Empty", "a search query must set one filter");
  return { kind: "key", match: textMatch(q.query.value.key, q.query.value.method) };
}

/** ListUserTokens and RevokeUserTokens. */
const userTokens: Pick<ServiceImpl<typeof UserService>, "listUserTokens" | "revokeUserTokens"> = {
  async listUserTokens(req, hctx) {
    const out = await listUserTokens(ctxOf(hctx), { userId: req.userId, page: listPage(req.query) });
    return {
      details: listDetails(ctxOf(hctx), out),
      result: out.tokens.map((t) => ({
        id: t.id,
        userId: t.userId,
        clientId: t.clientId,
        scopes: t.scopes,
        audience: t.audience,
        credential: t.credentialId ?? "",
        creationDate: ts(t.createdAt),
        expirationDate: ts(t.expiresAt),
      })),
    };
  },
  async revokeUserTokens(req, hctx) {
    const out = await revokeUserTokens(ctxOf(hctx), { userId: req.userId, tokenIds: req.tokenIds, clientId: req.clientId || undefined });
    return { ...changed(out.at), revoked: out.revoked };
  },
};

/** The RPCs kept in their own modules: tokens, authentication methods, external sign-in. */
const delegated = { ...userTokens, ...userAuthn, ...userIdps, ...userPermissions };

export function userService(): ServiceImpl<typeof UserService> {
  return {
    ...delegated,
    async createUser(req, hctx) {
      const out = await createUser(ctxOf(hctx), toCreateInput(req));
      return { id: out.id, creationDate: ts(out.createdAt) };
    },
    async getUserByID(req, hctx) {
      return { user: toUser(await getUser(ctxOf(hctx), req.userId)) };
    },
    async listUsers(req, hctx) {
      const out = await listUsers(ctxOf(hctx), {
        page: listPage(req.query),
        sort: enumValue(SORT_FROM, req.sortingColumn, "SortingColumn"),
        queries: req.queries.map(toQuery),
      });
      return { details: listDetails(ctxOf(hctx), out), sortingColumn: req.sortingColumn, result: out.users.map(toUser) };
    },
    async deleteUser(req, hctx) {
      return deleted(await deleteUser(ctxOf(hctx), req.userId));
    },
    async addPersonalAccessToken(req, hctx) {
      const pat = await addPersonalAccessToken(ctxOf(hctx), req.userId, dateOpt(req.expirationDate, "expiration_date"));
      return { id: pat.id, token: pat.token, creationDate: ts(pat.createdAt), expirationDate: tsOpt(pat.expiresAt) };
    },
    async listPersonalAccessTokens(req, hctx) {
      const out = await listPersonalAccessTokens(ctxOf(hctx), { userId: req.userId || undefined, page: listPage(req.query) });
      return {
        details: listDetails(ctxOf(hctx), out),
        result: out.tokens.map((t) => ({
          id: t.id,
          userId: t.userId,
          details: createdDetails(t.createdAt, t.orgId),
          expirationDate: tsOpt(t.expiresAt),
        })),
      };
    },
    async removePersonalAccessToken(req, hctx) {
      return deleted(await removePersonalAccessToken(ctxOf(hctx), req.userId, req.tokenId));
    },
    async updateUser(req, hctx) {
      return changed(await updateUser(ctxOf(hctx), toUpdateInput(req)));
    },
    async deactivateUser(req, hctx) {
      return changed(await deactivateUser(ctxOf(hctx), req.userId));
    },
    async reactivateUser(req, hctx) {
      return changed(await reactivateUser(ctxOf(hctx), req.userId));
    },
    async lockUser(req, hctx) {
      return changed(await lockUser(ctxOf(hctx), req.userId));
    },
    async unlockUser(req, hctx) {
      return changed(await unlockUser(ctxOf(hctx), req.userId));
    },
    async setPassword(req, hctx) {
      const v = req.verification;
      const changeDate = await setPassword(ctxOf(hctx), {
        userId: req.userId,
        password: req.newPassword?.password ?? "",
        changeRequired: req.newPassword?.changeRequired ?? false,
        currentPassword: v.case === "currentPassword" ? v.value : undefined,
        verificationCode: v.case === "verificationCode" ? v.value : undefined,
      });
      return { changeDate: ts(changeDate) };
    },
    async setUserMetadata(req, hctx) {
      return { setDate: ts(await setUserMetadata(ctxOf(hctx), { userId: req.userId, metadata: req.metadata })) };
    },
    async listUserMetadata(req, hctx) {
      const out = await listUserMetadata(ctxOf(hctx), { userId: req.userId, page: listPage(req.query), queries: req.queries.map(toMetadataQuery) });
      return {
        details: listDetails(ctxOf(hctx), out),
        result: out.entries.map((m) => ({ key: m.key, value: m.value, details: details(m, m.orgId) })),
      };
    },
    async deleteUserMetadata(req, hctx) {
      return deleted(await deleteUserMetadata(ctxOf(hctx), { userId: req.userId, keys: req.keys }));
    },
    async addKey(req, hctx) {
      const key = await addMachineKey(ctxOf(hctx), { userId: req.userId, expiresAt: dateOpt(req.expirationDate, "expiration_date"), publicKey: req.publicKey });
      return {
        keyId: key.id,
        keyContent: key.keyFile ? new TextEncoder().encode(JSON.stringify(key.keyFile)) : new Uint8Array(),
        creationDate: ts(key.createdAt),
      };
    },
    async listKeys(req, hctx) {
      const out = await listMachineKeys(ctxOf(hctx), { userId: req.userId || undefined, page: listPage(req.query) });
      return {
        details: listDetails(ctxOf(hctx), out),
        result: out.keys.map((k) => ({
          id: k.id,
          userId: k.userId,
          details: createdDetails(k.createdAt, k.orgId),
          expirationDate: tsOpt(k.expiresAt),
        })),
      };
    },
    async removeKey(req, hctx) {
      return deleted(await removeMachineKey(ctxOf(hctx), req.userId, req.keyId));
    },
    async addSecret(req, hctx) {
      const out = await addSecret(ctxOf(hctx), req.userId);
      return { clientSecret: out.clientSecret, creationDate: ts(out.createdAt) };
    },
    async removeSecret(req, hctx) {
      return deleted(await removeSecret(ctxOf(hctx), req.userId));
    },
  };
}
