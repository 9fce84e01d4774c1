import type { JsonObject } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import type { EventService } from "../../gen/svc/event/v2/event_service_pb.js";
import { listEvents } from "../domain/audit/audit.js";
import { ctxOf } from "./connect.js";
import { dateOpt, listDetails, listPage, ts } from "./convert.js";

export function eventService(): ServiceImpl<typeof EventService> {
  return {
    async listEvents(req, hctx) {
      const ctx = ctxOf(hctx);
      const { events, ...total } = await listEvents(ctx, {
        page: listPage(req.query),
        filter: {
          orgId: req.organizationId,
          aggregateType: req.aggregateType,
          aggregateId: req.aggregateId,
          types: req.eventTypes,
          editorUserId: req.editorUserId,
          from: dateOpt(req.from, "from"),
          to: dateOpt(req.to, "to"),
        },
      });
      return {
        details: listDetails(ctx, total),
        result: events.map((e) => ({
          id: e.id,
          type: e.type,
          aggregateType: e.aggregateType,
          aggregateId: e.aggregateId,
          organizationId: e.orgId ?? "",
          editorUserId: e.editorUserId ?? "",
          creationDate: ts(e.createdAt),
          payload: e.payload as JsonObject,
        })),
      };
    },
  };
}
