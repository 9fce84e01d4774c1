// SVC_SMTP_URL and SVC_SMTP_FROM: both or neither, an smtp:// or smtps:// URL, a one-line sender.
import { expect, it } from "@jest/globals";
import { loadConfig } from "../../src/config.js";

it("takes an smtp(s) URL with its sender, and refuses anything half or wrong", () => {
  expect(loadConfig({})).toMatchObject({ smtpUrl: undefined, smtpFrom: undefined });
  expect(loadConfig({ SVC_SMTP_URL: "smtps://u:p@mail.example.com:465", SVC_SMTP_FROM: "svc <no-reply@example.com>" })).toMatchObject({
    smtpUrl: "smtps://u:p@mail.example.com:465",
    smtpFrom: "svc <no-reply@example.com>",
  });
  expect(() => loadConfig({ SVC_SMTP_URL: "smtp://mail.example.com" })).toThrow(/SVC_SMTP_FROM is required with SVC_SMTP_URL/);
  expect(() => loadConfig({ SVC_SMTP_FROM: "a@b.c" })).toThrow(/SVC_SMTP_FROM needs SVC_SMTP_URL/);
  expect(() => loadConfig({ SVC_SMTP_URL: "https://mail.example.com", SVC_SMTP_FROM: "a@b.c" })).toThrow(/SVC_SMTP_URL must use smtp: or smtps:/);
  expect(() => loadConfig({ SVC_SMTP_URL: "mail.example.com", SVC_SMTP_FROM: "a@b.c" })).toThrow(/SVC_SMTP_URL must be an absolute URL/);
  expect(() => loadConfig({ SVC_SMTP_URL: "smtp://m.example.com", SVC_SMTP_FROM: "a@b.c\nBcc: x@y.z" })).toThrow(/SVC_SMTP_FROM must be one line/);
});
