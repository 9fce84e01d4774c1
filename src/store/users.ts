// Users and their profile rows (emails, phones, addresses), the user query compiler, the hot-path reads.
import type { Db } from "./index.js";

export class UserRepo {
  constructor(readonly db: Db) {}
}
