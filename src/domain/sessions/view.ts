// A stored session as the API shows it: its factors with their times, metadata as bytes, the user agent.
import type { SessionRow, SessionUserRow } from "../../store/sessions.js";
import { readMetadata } from "./input.js";
import type { Factors, SessionView, UserAgent } from "./model.js";
import { displayName, loginName } from "./session-user.js";

export function factorsOf(s: SessionRow, user: SessionUserRow | undefined): Factors {
  const f: Factors = {};
  if (s.userCheckedAt && user) {
    f.user = { verifiedAt: s.userCheckedAt, id: user.id, loginName: loginName(user), displayName: displayName(user), orgId: user.orgId };
  }
  if (s.passwordCheckedAt) f.password = { verifiedAt: s.passwordCheckedAt, changeRequired: s.passwordChangeRequired };
  if (s.webauthnCheckedAt) f.webAuthN = { verifiedAt: s.webauthnCheckedAt, userVerified: s.webauthnUserVerified };
  if (s.intentCheckedAt) f.intent = { verifiedAt: s.intentCheckedAt };
  if (s.totpCheckedAt) f.totp = { verifiedAt: s.totpCheckedAt };
  if (s.otpEmailCheckedAt) f.otpEmail = { verifiedAt: s.otpEmailCheckedAt };
  return f;
}

export function sessionView(s: SessionRow, user: SessionUserRow | undefined, instanceId: string): SessionView {
  const metadata = Object.fromEntries(Object.entries(readMetadata(s.metadata)).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, "base64"))]));
  return {
    id: s.id,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    sequence: s.sequence,
    factors: factorsOf(s, user),
    metadata,
    userAgent: (s.userAgent ?? undefined) as UserAgent | undefined,
    expiresAt: s.expiresAt,
    ownerId: s.orgId ?? instanceId,
  };
}
