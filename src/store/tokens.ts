// Issued tokens, the batching token writer, assertion replay detection, and the one bearer-token resolution read.
import type { Db } from "./index.js";

export class TokenRepo {
  constructor(readonly db: Db) {}
}
