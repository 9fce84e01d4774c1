// Instance defaults and per-organization overrides of every setting kind.
import type { Db } from "./index.js";

export class SettingsRepo {
  constructor(readonly db: Db) {}
}
