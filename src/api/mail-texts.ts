// MailTextService: the instance's texts of the mails, per type and language (domain/mail/mail-texts.ts); while the
// instance has none of its own, Get shows the catalogue's (src/mail/messages).
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { MailTextService } from "../../gen/svc/settings/v2/mail_text_service_pb.js";
import { getMailText, resetMailText, setMailText } from "../domain/mail/mail-texts.js";
import { MAIL_VARIABLES, mailTextLanguage, mailType } from "../domain/mail/texts.js";
import { defaultMailText } from "../mail/catalogue.js";
import { ctxOf } from "./connect.js";
import { details, ts } from "./convert.js";

const which = (req: { type: string; language: string }) => ({ type: mailType(req.type), language: mailTextLanguage(req.language) });

export function mailTextService(): ServiceImpl<typeof MailTextService> {
  return {
    async getMailText(req, hctx: HandlerContext) {
      const { type, language } = which(req);
      const own = await getMailText(ctxOf(hctx), type, language);
      return { text: own ?? defaultMailText(type, language), isDefault: !own, variables: [...MAIL_VARIABLES] };
    },
    async setMailText(req, hctx: HandlerContext) {
      const { type, language } = which(req);
      const row = await setMailText(ctxOf(hctx), type, language, req.text);
      return { details: details(row, row.ownerId) };
    },
    async resetMailText(req, hctx: HandlerContext) {
      const { type, language } = which(req);
      const r = await resetMailText(ctxOf(hctx), type, language);
      return { details: { changeDate: ts(r.changedAt), resourceOwner: r.ownerId } };
    },
  };
}
