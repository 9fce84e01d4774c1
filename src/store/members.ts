// Organization and instance memberships, and the advisory locks that keep the last owners.
import type { Db } from "./index.js";

export class MemberRepo {
  constructor(readonly db: Db) {}
}
