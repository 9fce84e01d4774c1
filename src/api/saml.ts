// svc.saml.v2.SAMLService: the login UI's half of SAML SSO. Translation only; the rules are in
// src/domain/saml/login-ui.ts.
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ErrorReason, SAMLRequestSchema } from "../../gen/svc/saml/v2/saml_pb.js";
import type { SAMLService } from "../../gen/svc/saml/v2/saml_service_pb.js";
import { invalidArgument } from "../domain/errors.js";
import { createResponse, getSamlRequest, type SamlAnswerer } from "../domain/saml/login-ui.js";
import type { SamlError } from "../domain/saml/response.js";
import { ctxOf } from "./connect.js";
import { changed, ts } from "./convert.js";

const ERRORS: Record<number, SamlError> = {
  [ErrorReason.AUTHN_FAILED]: "AuthnFailed",
  [ErrorReason.REQUEST_DENIED]: "RequestDenied",
  [ErrorReason.NO_PASSIVE]: "NoPassive",
};

export function samlService(idp: SamlAnswerer): ServiceImpl<typeof SAMLService> {
  return {
    async getSAMLRequest(req, hctx) {
      const r = await getSamlRequest(ctxOf(hctx), req.samlRequestId);
      return {
        samlRequest: create(SAMLRequestSchema, {
          id: r.id,
          creationDate: ts(r.createdAt),
          expirationDate: ts(r.expiresAt),
          issuer: r.issuer,
          assertionConsumerService: r.acsUrl,
          relayState: r.relayState ?? "",
          binding: r.binding,
          forceAuthn: r.forceAuthn,
          isPassive: r.isPassive,
        }),
      };
    },

    async createResponse(req, hctx) {
      const ctx = ctxOf(hctx);
      const kind = req.responseKind;
      if (kind.case === undefined) throw invalidArgument("Errors.SamlRequest.Response.Missing", "give either session or error", { field: "response_kind" });
      const { answer, at } =
        kind.case === "session"
          ? await createResponse(ctx, idp, { samlRequestId: req.samlRequestId, session: kind.value })
          : await createResponse(ctx, idp, {
              samlRequestId: req.samlRequestId,
              error: { error: ERRORS[kind.value.error], description: kind.value.errorDescription },
            });
      const binding =
        "post" in answer
          ? {
              case: "post" as const,
              value: { $typeName: "svc.saml.v2.PostResponse" as const, samlResponse: answer.post.samlResponse, relayState: answer.post.relayState ?? "" },
            }
          : { case: "redirect" as const, value: { $typeName: "svc.saml.v2.RedirectResponse" as const } };
      return { details: changed(at), url: answer.url, binding };
    },
  };
}
