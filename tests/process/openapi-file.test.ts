import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { formatDocument, OPENAPI_FILE, servedDocument } from "../../scripts/openapi";
import { scratchDir } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const ROOT = new URL("../..", import.meta.url).pathname;
const OUT_OF_DATE = "openapi.json differs from the document served at /swagger/json: run `bun run openapi`";

async function committedText(): Promise<string> {
  const file = Bun.file(OPENAPI_FILE);
  if (!(await file.exists())) throw new Error("openapi.json is missing: run `bun run openapi`");
  return file.text();
}

/** `bun run openapi ...args` as a developer or CI runs it. */
async function runOpenapiScript(args: string[]) {
  const proc = Bun.spawn(["bun", "run", "openapi", ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { stdout, stderr, code };
}

describe("openapi.json, the committed OpenAPI document", () => {
  test("is the document the service serves", async () => {
    const committed: unknown = JSON.parse(await committedText());
    expect(committed, OUT_OF_DATE).toEqual(await servedDocument());
  });

  test("is written stably: two-space indentation and a final newline", async () => {
    const text = await committedText();
    expect(text, "openapi.json was edited by hand or reformatted: run `bun run openapi`").toBe(
      formatDocument(JSON.parse(text)),
    );
  });

  test("`bun run openapi FILE` writes it, and `--check FILE` exits 0 then, 1 with a clear message on drift", async () => {
    const scratch = scratchDir();
    try {
      const file = join(scratch.dir, "openapi.json");
      const written = await runOpenapiScript([file]);
      expect(written.code).toBe(0);
      expect(await Bun.file(file).text()).toBe(formatDocument(await servedDocument()));

      const upToDate = await runOpenapiScript(["--check", file]);
      expect(upToDate.code).toBe(0);
      expect(upToDate.stdout).toContain("is up to date");

      const drifted = JSON.parse(await Bun.file(file).text());
      drifted.info.version = "0.0.0";
      await Bun.write(file, formatDocument(drifted));
      const check = await runOpenapiScript(["--check", file]);
      expect(check.code).toBe(1);
      expect(check.stderr).toContain("differs from the document the service serves at /swagger/json");
      expect(check.stderr).toContain("run `bun run openapi`");
    } finally {
      scratch.cleanup();
    }
  });
});
