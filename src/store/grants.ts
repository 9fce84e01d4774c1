// User grants and the holders of grants (for invalidation).
import type { Db } from "./index.js";

export class UserGrantRepo {
  constructor(readonly db: Db) {}
}
