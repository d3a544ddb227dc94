import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";

/**
 * The README and every page under docs/ point only at things that exist: each relative link
 * names a file in the repository, and each `#anchor` a heading of the page it names (GitHub's
 * slugs). On the README and the docs/*.md pages (not docs/performance.md, whose history names
 * 3996a32's files on purpose, nor docs/decisions/), a repository path quoted in backticks
 * (`src/...`, `tests/...`, `docs/...`) exists too.
 */
const ROOT = new URL("../..", import.meta.url).pathname;

function markdownFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith(".md") ? [path] : [];
  });
}

const PAGES = ["README.md", ...markdownFiles("docs")];
const text = (page: string) => Bun.file(join(ROOT, page)).text();

/** Markdown without its fenced code blocks: a link inside one is an example, not a link. */
const prose = (markdown: string) => markdown.replace(/^```[\s\S]*?^```$/gm, "");

/** GitHub's anchor for each heading of a page, a repeated one numbered -1, -2, … */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading = ""] of prose(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** Every broken relative link of a page, as "page: target". */
async function brokenLinks(page: string): Promise<string[]> {
  const broken: string[] = [];
  for (const [, target = ""] of prose(await text(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path = "", anchor] = target.split("#");
    const file = path === "" ? page : relative(ROOT, join(ROOT, dirname(page), path));
    if (!existsSync(join(ROOT, file))) {
      broken.push(`${page}: ${target} (no such file)`);
      continue;
    }
    if (anchor !== undefined && file.endsWith(".md") && !anchors(await text(file)).has(anchor)) {
      broken.push(`${page}: ${target} (no such heading in ${file})`);
    }
  }
  return broken;
}

const QUOTED_PATH = /`((?:src|tests|bench|scripts|docs|drizzle|\.ci)\/[\w./-]*\w)`/g;

/** Repository paths quoted in backticks that name nothing (a glob or a placeholder is skipped). */
async function missingPaths(page: string): Promise<string[]> {
  const missing: string[] = [];
  for (const [, path = ""] of (await text(page)).matchAll(QUOTED_PATH)) {
    if (/[*<>]|NNNN|\.\.\./.test(path)) continue;
    if (!existsSync(join(ROOT, path))) missing.push(`${page}: ${path}`);
  }
  return missing;
}

describe("the README and docs/", () => {
  test("cover every page under docs/", () => {
    expect(PAGES).toContain("docs/api.md");
    expect(PAGES).toContain("docs/decisions/README.md");
  });

  test("every relative link names a file that exists, and every anchor a heading there", async () => {
    const broken = (await Promise.all(PAGES.map(brokenLinks))).flat();
    expect(broken).toEqual([]);
  });

  test("every repository path quoted on the current pages exists", async () => {
    const current = PAGES.filter((page) => page !== "docs/performance.md" && !page.startsWith("docs/decisions/"));
    const missing = (await Promise.all(current.map(missingPaths))).flat();
    expect(missing).toEqual([]);
  });

  test("every docs/ page a comment in src/ names exists", async () => {
    const missing: string[] = [];
    for await (const file of new Bun.Glob("src/**/*.ts").scan(ROOT)) {
      for (const [path = ""] of (await text(file)).matchAll(/\bdocs\/[\w./-]*\.md\b/g)) {
        if (!existsSync(join(ROOT, path))) missing.push(`${file}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  test("the README is a front door: at most 300 lines", async () => {
    expect((await text("README.md")).split("\n").length).toBeLessThanOrEqual(300);
  });
});
