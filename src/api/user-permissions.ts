// UserService.ListMyPermissions: proto ⇄ domain only; the role table is src/domain/access/permissions.ts.
import type { ServiceImpl } from "@connectrpc/connect";
import type { UserService } from "../../gen/svc/user/v2/user_service_pb.js";
import { listMyPermissions } from "../domain/access/my-permissions.js";
import { ctxOf } from "./connect.js";

export const userPermissions: Pick<ServiceImpl<typeof UserService>, "listMyPermissions"> = {
  listMyPermissions(_req, hctx) {
    const mine = listMyPermissions(ctxOf(hctx));
    return {
      userId: mine.userId,
      organizationId: mine.orgId,
      instanceRoles: mine.instanceRoles,
      instancePermissions: mine.instancePermissions,
      organizations: mine.orgs.map((o) => ({ organizationId: o.orgId, roles: o.roles, permissions: o.permissions })),
    };
  },
};
