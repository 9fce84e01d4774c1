// A secret kept in a file only its owner can read: the first start's admin
// PAT. The domain decides when it is written and discarded; this is how.
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";

export interface SecretFile {
  /** Creates the directory (0700) if needed and writes the file with mode 0600, replacing what was there. */
  write(content: string): Promise<void>;
  /** Removes the file if it exists. */
  remove(): Promise<void>;
}

export function secretFile(file: string): SecretFile {
  return {
    async write(content) {
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      await writeFile(file, content, { mode: 0o600 });
      // writeFile keeps the mode of a file that already existed.
      await chmod(file, 0o600);
    },
    async remove() {
      await rm(file, { force: true });
    },
  };
}
