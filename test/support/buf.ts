import { execFile } from "node:child_process";
import path from "node:path";
import { ROOT } from "./server.js";

export interface BufResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `buf curl` (the independent wire client) and never throws on a non-zero exit. */
export function bufCurl(args: string[]): Promise<BufResult> {
  return new Promise((resolve) => {
    execFile(path.join(ROOT, "node_modules/.bin/buf"), ["curl", ...args], { cwd: ROOT, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code: typeof code === "number" ? code : 1, stdout, stderr });
    });
  });
}
