import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { type SigningKey, type SigningKeyQuery, SigningKeySchema, SigningKeyState } from "../../gen/svc/instance/v2/instance_pb.js";
import type { InstanceService } from "../../gen/svc/instance/v2/instance_service_pb.js";
import type { SigningKeyState as KeyState, SigningKeyInfo, SigningKeys } from "../crypto/signing-keys.js";
import { invalidArgument } from "../domain/errors.js";
import { getInstance, listSigningKeys, rotateSigningKey } from "../domain/orgs/instance.js";
import { addInstanceMember, listInstanceMembers, removeInstanceMember, updateInstanceMember } from "../domain/orgs/members.js";
import { ctxOf } from "./connect.js";
import { changed, deleted, details, enumValue, listDetails, listPage, ts, tsOpt } from "./convert.js";
import { toMember, toMemberQuery } from "./members.js";

const KEY_STATES: Record<number, KeyState> = {
  [SigningKeyState.ACTIVE]: "ACTIVE",
  [SigningKeyState.RETIRED]: "RETIRED",
  [SigningKeyState.EXPIRED]: "EXPIRED",
  [SigningKeyState.PENDING]: "PENDING",
};
const KEY_STATE_OUT: Record<KeyState, SigningKeyState> = {
  ACTIVE: SigningKeyState.ACTIVE,
  RETIRED: SigningKeyState.RETIRED,
  EXPIRED: SigningKeyState.EXPIRED,
  PENDING: SigningKeyState.PENDING,
};

function toKeyState(q: SigningKeyQuery): KeyState {
  const v = q.query;
  switch (v.case) {
    case "stateQuery":
      return enumValue(KEY_STATES, v.value.state, "SigningKey.State");
    case undefined:
      throw invalidArgument("Errors.Query.Empty", "a search query must set one filter");
  }
}

function toSigningKey(k: SigningKeyInfo): SigningKey {
  return create(SigningKeySchema, {
    id: k.id,
    algorithm: k.alg,
    state: KEY_STATE_OUT[k.state],
    creationDate: ts(k.createdAt),
    activeFrom: ts(k.activeFrom),
    verifyUntil: tsOpt(k.verifyUntil),
  });
}

export function instanceService(externalUrl: string, keys: SigningKeys): ServiceImpl<typeof InstanceService> {
  return {
    async getInstance(_req, hctx) {
      const i = await getInstance(ctxOf(hctx));
      return { instance: { id: i.id, details: details(i, i.id), name: i.name, externalUrl, defaultOrganizationId: i.defaultOrgId ?? "" } };
    },
    async addInstanceMember(req, hctx) {
      return { creationDate: ts(await addInstanceMember(ctxOf(hctx), { userId: req.userId, roles: req.roles })) };
    },
    async listInstanceMembers(req, hctx) {
      const out = await listInstanceMembers(ctxOf(hctx), { page: listPage(req.query), queries: req.queries.map(toMemberQuery) });
      return { details: listDetails(ctxOf(hctx), out), result: out.members.map(toMember) };
    },
    async updateInstanceMember(req, hctx) {
      return changed(await updateInstanceMember(ctxOf(hctx), { userId: req.userId, roles: req.roles }));
    },
    async removeInstanceMember(req, hctx) {
      return deleted(await removeInstanceMember(ctxOf(hctx), { userId: req.userId }));
    },
    async listSigningKeys(req, hctx) {
      const out = await listSigningKeys(ctxOf(hctx), keys, { page: listPage(req.query), states: req.queries.map(toKeyState) });
      return { details: listDetails(ctxOf(hctx), out), result: out.keys.map(toSigningKey) };
    },
    async rotateSigningKey(_req, hctx) {
      const r = await rotateSigningKey(ctxOf(hctx), keys);
      return { keyId: r.id, creationDate: ts(r.createdAt), previousVerifyUntil: r.retiredKeyIds.length ? ts(r.verifyUntil) : undefined };
    },
  };
}
