// Machine credentials: personal access tokens, machine keys, client secrets.
import type { Db } from "./index.js";

export class CredentialRepo {
  constructor(readonly db: Db) {}
}
