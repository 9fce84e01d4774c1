// Organizations, their metadata and the instance row.
import type { Db } from "./index.js";

export class OrgRepo {
  constructor(readonly db: Db) {}
}
