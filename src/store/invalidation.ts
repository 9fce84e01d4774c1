// What writes call, inside their transaction, when they change something that
// cached authentication derived from (see auth-cache.ts).
import type { AuthTarget } from "./auth-cache.js";
import { invalidateAuth } from "./auth-cache.js";
import type { Db } from "./index.js";

export class InvalidationRepo {
  constructor(private readonly db: Db) {}

  /** Drops what this and every other replica cached about `target` (on commit for the others). */
  invalidate(target: AuthTarget): Promise<void> {
    return invalidateAuth(this.db as never, target);
  }
}
