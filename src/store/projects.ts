// Projects, their roles and project grants.
import type { Db } from "./index.js";

export class ProjectRepo {
  constructor(readonly db: Db) {}
}
