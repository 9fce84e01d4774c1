// Which module runs each factor check and challenge of a session request.
import type { FactorChallenge, FactorCheck, FactorName } from "./factors.js";
import type { ChallengeRequests } from "./model.js";
import { passwordCheck } from "./password-check.js";

export const CHECKS: { [K in FactorName]?: FactorCheck<K> } = {
  password: passwordCheck,
};

export const CHALLENGES: { [K in keyof ChallengeRequests]?: FactorChallenge<K> } = {};
