// API and OIDC applications and their keys.
import type { Db } from "./index.js";

export class AppRepo {
  constructor(readonly db: Db) {}
}
