import type { ServiceImpl } from "@connectrpc/connect";
import type { InstanceService } from "../../gen/svc/instance/v2/instance_service_pb.js";
import { getInstance } from "../domain/instance.js";
import { type ApiDeps, domainCtx } from "./connect.js";
import { details } from "./convert.js";

export function instanceService(deps: ApiDeps, externalUrl: string): ServiceImpl<typeof InstanceService> {
  return {
    async getInstance(_req, hctx) {
      const i = await getInstance(domainCtx(deps, hctx));
      return { instance: { id: i.id, details: details(i, i.id), name: i.name, externalUrl, defaultOrganizationId: i.defaultOrgId ?? "" } };
    },
  };
}
