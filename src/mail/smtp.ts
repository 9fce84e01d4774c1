// The domain's Mailer over SMTP (nodemailer): SVC_SMTP_URL names the server, its credentials and TLS (smtps:// is
// TLS from the start; smtp:// upgrades with STARTTLS when the server offers it). Every step has a deadline, so a
// mail server that stops answering fails the request instead of hanging it. Each mail is rendered (render.ts) into a
// plain-text and an HTML part (multipart/alternative) in the mail's language.
import nodemailer from "nodemailer";
import type { Mailer } from "../domain/identity/authn/ports.js";
import { renderMail } from "./render.js";

export interface SmtpMailer extends Mailer {
  close(): void;
}

export function smtpMailer(url: string, from: string): SmtpMailer {
  const transport = nodemailer.createTransport({ url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 });
  return {
    async send(mail) {
      const { subject, text, html } = renderMail(mail);
      await transport.sendMail({ from, to: mail.to, subject, text, html, headers: { "Content-Language": mail.language } });
    },
    close: () => transport.close(),
  };
}
