import { expect, test } from "bun:test";

/**
 * The start script's environment (package.json, docs/decisions/0016-jsc-memory-settings.md) is
 * the service's default: the single executable cannot read package.json, so the Dockerfile and
 * the systemd unit that run it set the same values.
 */
const ROOT = new URL("../..", import.meta.url).pathname;
const read = (path: string) => Bun.file(`${ROOT}${path}`).text();

test("the start script's settings are set wherever the single executable is run", async () => {
  const { scripts } = JSON.parse(await read("package.json")) as { scripts: Record<string, string> };
  const settings = (scripts.start ?? "").split(/\s+/).filter((word) => /^BUN_JSC_\w+=/.test(word));
  expect(settings).toEqual(["BUN_JSC_forceRAMSize=134217728", "BUN_JSC_useFTLJIT=0"]);
  const dockerfile = await read("Dockerfile");
  const unit = await read("docs/deploy/plant-store.service");
  for (const setting of settings) {
    expect(dockerfile).toMatch(new RegExp(`^ENV .*\\b${setting}\\b`, "m"));
    expect(unit).toMatch(new RegExp(`^Environment=.*\\b${setting}\\b`, "m"));
  }
});
