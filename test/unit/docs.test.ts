// The documentation stays truthful to the code and navigable: every SVC_* variable that src/ or bin/ reads is in
// docs/configuration.md, every relative link in README.md and docs/ resolves (to a file, and for #anchors to a
// heading by GitHub's slug rules), and the README stays short.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

function walk(dir: string, keep: (file: string) => boolean): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walk(path, keep));
    else if (keep(path)) out.push(path);
  }
  return out;
}

/** The lines of a Markdown file outside fenced code blocks. */
function proseLines(text: string): string[] {
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of text.split("\n")) {
    const marker = /^\s*(```|~~~)/.exec(line)?.[1];
    if (marker) {
      if (fence === null) fence = marker;
      else if (fence === marker) fence = null;
      continue;
    }
    if (fence === null) out.push(line);
  }
  return out;
}

/** GitHub's heading anchors: rendered text, lower case, punctuation dropped, spaces to hyphens, -1, -2 for repeats. */
function headingSlugs(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  for (const line of proseLines(markdown)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const text = heading
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/<[^>]+>/g, "")
      .toLowerCase();
    const base = text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    slugs.add(count === 0 ? base : `${base}-${count}`);
  }
  return slugs;
}

/** Relative link targets of a Markdown file (inline links and images outside code). */
function relativeLinks(markdown: string): string[] {
  const out: string[] = [];
  for (const line of proseLines(markdown)) {
    const prose = line.replace(/`[^`]*`/g, "");
    for (const match of prose.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1] as string;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      out.push(target);
    }
  }
  return out;
}

const markdownFiles = [join(root, "README.md"), ...walk(join(root, "docs"), (f) => f.endsWith(".md"))];

describe("docs/configuration.md", () => {
  it("documents every SVC_* variable that src/ and bin/ read", () => {
    const sources = [...walk(join(root, "src"), (f) => /\.(ts|js|mjs)$/.test(f)), ...walk(join(root, "bin"), (f) => /\.(ts|js|mjs|cjs)$/.test(f))];
    const names = new Set<string>();
    // Internal error codes spelled like variables (`code: "SVC_PRIVATE_ADDRESS"`) are not configuration.
    const errorCodes = new Set<string>();
    for (const file of sources) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/\bSVC_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_$])/g)) names.add(m[0]);
      for (const m of text.matchAll(/\bcode\s*(?::|===)\s*"(SVC_[A-Z0-9_]+)"/g)) errorCodes.add(m[1] as string);
    }
    for (const code of errorCodes) names.delete(code);
    expect(names.size).toBeGreaterThan(40);
    expect(names).toContain("SVC_DATABASE_URL");
    const documented = readFileSync(join(root, "docs/configuration.md"), "utf8");
    const missing = [...names].filter((name) => !new RegExp(`\\b${name}\\b`).test(documented)).sort();
    expect(missing).toEqual([]);
  });
});

describe("links in README.md and docs/", () => {
  it("resolve to existing files and headings", () => {
    expect(markdownFiles.length).toBeGreaterThan(5);
    const broken: string[] = [];
    for (const file of markdownFiles) {
      const text = readFileSync(file, "utf8");
      for (const target of relativeLinks(text)) {
        const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined];
        const path = pathPart === "" ? file : resolve(dirname(file), decodeURIComponent(pathPart));
        const where = `${relative(root, file)} → ${target}`;
        if (!existsSync(path)) {
          broken.push(`${where}: no such file`);
          continue;
        }
        if (anchor !== undefined && path.endsWith(".md") && statSync(path).isFile()) {
          if (!headingSlugs(readFileSync(path, "utf8")).has(decodeURIComponent(anchor).toLowerCase())) {
            broken.push(`${where}: no such heading`);
          }
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("the slug rules match GitHub's", () => {
    const slugs = headingSlugs(
      "# svc\n## Sessions (`svc.session.v2.SessionService`, REST under `/v2/sessions`)\n## OAuth 2.0 client credentials\n```\n# not a heading\n```\n## A\n## A\n## Browsers on other origins (CORS)\n",
    );
    expect([...slugs]).toEqual([
      "svc",
      "sessions-svcsessionv2sessionservice-rest-under-v2sessions",
      "oauth-20-client-credentials",
      "a",
      "a-1",
      "browsers-on-other-origins-cors",
    ]);
  });
});

describe("README.md", () => {
  it("is at most 300 lines", () => {
    const lines = readFileSync(join(root, "README.md"), "utf8").replace(/\n$/, "").split("\n").length;
    expect(lines).toBeLessThanOrEqual(300);
  });
});
