import { describe, expect, test } from "bun:test";
import { resolve } from "node:path";

/**
 * A bench variant is the committed tree with a patch applied (bench/pg-grouping.ts and the
 * re-measure commands of docs/decisions/): a patch that no longer applies breaks that command,
 * and would only be found when someone re-measures. In a checkout, `git apply --check` holds
 * each patch to the tree exactly (no fuzz); outside one (an unpacked archive), the bench's own
 * `patch -p1`, dry run.
 */
const ROOT = resolve(new URL("../..", import.meta.url).pathname);
// A contender's installed packages (bench/contenders/*/node_modules) carry patches of their own.
const PATCHES = [...new Bun.Glob("bench/**/*.patch").scanSync(ROOT)].filter((p) => !p.includes("node_modules")).sort();

const top = Bun.spawnSync(["git", "rev-parse", "--show-toplevel"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
const inCheckout = top.success && resolve(top.stdout.toString().trim()) === ROOT;
const check = (patch: string) =>
  inCheckout ? ["git", "apply", "--check", patch] : ["patch", "-p1", "--dry-run", "--quiet", "-i", patch];

describe("bench variant patches", () => {
  test("there are some to check", () => {
    expect(PATCHES.length).toBeGreaterThan(0);
  });

  for (const patch of PATCHES) {
    test(`${patch} applies to this tree`, () => {
      const done = Bun.spawnSync(check(patch), { cwd: ROOT, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      expect(`${done.stdout}${done.stderr}`.trim()).toBe("");
      expect(done.exitCode).toBe(0);
    });
  }
});
