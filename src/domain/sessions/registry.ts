// Which module runs each factor check and challenge of a session request: every one has its module (the types
// make both tables complete).

import { otpEmailChallenge, otpEmailCheck, totpCheck } from "../identity/authn/session-otp.js";
import { webAuthNChallenge, webAuthNCheck } from "../identity/authn/session-webauthn.js";
import { idpIntentCheck } from "../idp/session-intent.js";
import type { FactorChallenge, FactorCheck, FactorName } from "./factors.js";
import type { ChallengeRequests } from "./model.js";
import { passwordCheck } from "./password-check.js";

export const CHECKS: { [K in FactorName]: FactorCheck<K> } = {
  password: passwordCheck,
  totp: totpCheck,
  otpEmail: otpEmailCheck,
  webAuthN: webAuthNCheck,
  idpIntent: idpIntentCheck,
};

export const CHALLENGES: { [K in keyof ChallengeRequests]-?: FactorChallenge<K> } = {
  webAuthN: webAuthNChallenge,
  otpEmail: otpEmailChallenge,
};
