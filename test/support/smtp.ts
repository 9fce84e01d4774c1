// An in-process SMTP server for the tests: smtp-server on a random loopback port, with a user and password (the
// URL svc gets carries them, as SVC_SMTP_URL would), every message parsed with mailparser and kept in order.
import type { AddressInfo } from "node:net";
import { type ParsedMail, simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";

export interface SmtpSink {
  /** smtp://user:password@127.0.0.1:<port>, for SVC_SMTP_URL. */
  url: string;
  messages: ParsedMail[];
  /** The next message to `to` not yet taken (waits for it). */
  next(to: string, timeoutMs?: number): Promise<ParsedMail>;
  close(): Promise<void>;
}

const USER = "svc-mailer";
const PASSWORD = "smtp-Passw0rd";

export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: ParsedMail[] = [];
  const taken = new Set<ParsedMail>();
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    secure: false,
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    authMethods: ["PLAIN", "LOGIN"],
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === USER && auth.password === PASSWORD) cb(null, { user: USER });
      else cb(new Error("invalid credentials"));
    },
    onData(stream, _session, cb) {
      simpleParser(stream).then(
        (mail) => {
          messages.push(mail);
          for (const w of waiters.splice(0)) w();
          cb();
        },
        (err: Error) => cb(err),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  const find = (to: string) => messages.find((m) => !taken.has(m) && recipients(m).includes(to.toLowerCase()));
  return {
    url: `smtp://${USER}:${PASSWORD}@127.0.0.1:${port}`,
    messages,
    async next(to, timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = find(to);
        if (m) {
          taken.add(m);
          return m;
        }
        if (Date.now() > deadline) throw new Error(`no e-mail to ${to} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function recipients(m: ParsedMail): string[] {
  const to = Array.isArray(m.to) ? m.to : m.to ? [m.to] : [];
  return to.flatMap((a) => a.value.map((v) => (v.address ?? "").toLowerCase()));
}

/** The code in a message (the indented line under "Your code"), or the `code` query parameter of its link. */
export function codeFrom(m: ParsedMail): string {
  const text = m.text ?? "";
  const indented = /\n {4}(\S+)\n/.exec(text);
  if (indented?.[1]) return indented[1];
  const link = linkFrom(m);
  const code = new URL(link).searchParams.get("code");
  if (!code) throw new Error(`no code in the message:\n${text}`);
  return code;
}

export function linkFrom(m: ParsedMail): string {
  const link = /https?:\/\/\S+/.exec(m.text ?? "")?.[0];
  if (!link) throw new Error(`no link in the message:\n${m.text}`);
  return link;
}
