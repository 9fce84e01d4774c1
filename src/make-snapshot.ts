// `node dist/make-snapshot.js <dir>`: makes the embedded database snapshot in <dir> (scripts/build.mjs runs it).
import path from "node:path";
import { makeSnapshot } from "./store/make-snapshot.js";

const target = process.argv[2];
if (!target) {
  console.error("usage: make-snapshot <dir>");
  process.exit(2);
}
await makeSnapshot(path.resolve(target));
