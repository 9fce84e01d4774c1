// Signing keys (rows only; the crypto lives in src/crypto).
import type { Db } from "./index.js";

export class SigningKeyRepo {
  constructor(readonly db: Db) {}
}
