import type { ServiceImpl } from "@connectrpc/connect";
import { ResourceOwnerType } from "../../gen/svc/settings/v2/settings_pb.js";
import type { SettingsService } from "../../gen/svc/settings/v2/settings_service_pb.js";
import { passwordComplexity } from "../domain/settings.js";
import { type ApiDeps, domainCtx } from "./connect.js";

export function settingsService(deps: ApiDeps): ServiceImpl<typeof SettingsService> {
  return {
    async getPasswordComplexitySettings(req, hctx) {
      const s = await passwordComplexity(domainCtx(deps, hctx), req.organizationId || undefined);
      return {
        settings: {
          minLength: BigInt(s.minLength),
          requiresUppercase: s.requiresUppercase,
          requiresLowercase: s.requiresLowercase,
          requiresNumber: s.requiresNumber,
          requiresSymbol: s.requiresSymbol,
          resourceOwnerType: s.resourceOwner === "org" ? ResourceOwnerType.ORG : ResourceOwnerType.INSTANCE,
        },
      };
    },
  };
}
