import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { formatDocument, servedDocument } from "../../scripts/openapi";
import { scratchDir } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const ROOT = new URL("../..", import.meta.url).pathname;

/** Runs a linter from node_modules/.bin, as `bun run lint` does, and returns its JSON report. */
async function lint(command: string[]): Promise<unknown> {
  const proc = Bun.spawn(["bun", "--bun", ...command], {
    cwd: ROOT,
    env: { ...process.env, REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  await proc.exited;
  try {
    return JSON.parse(stdout);
  } catch {
    throw new Error(`${command[0]} wrote no JSON report: ${stdout}${stderr}`);
  }
}

/*
 * The third-party tools the issue tried (Spectral, Redocly) on the document as served, with
 * the rulesets `bun run lint` uses on openapi.json: no error, and only the warnings named here.
 */
describe("the served OpenAPI document under third-party linters", () => {
  test("Spectral's spectral:oas: no error; the one warning is info-contact", async () => {
    const scratch = scratchDir();
    try {
      const file = join(scratch.dir, "served.json");
      await Bun.write(file, formatDocument(await servedDocument()));
      const report = (await lint(["spectral", "lint", file, "--ruleset", ".spectral.yaml", "-f", "json"])) as Array<{
        code: string;
        severity: number;
        path: string[];
      }>;
      expect(report.map(({ code, severity, path }) => ({ code, severity, at: path.join(".") }))).toEqual([
        { code: "info-contact", severity: 1, at: "info" },
      ]);
    } finally {
      scratch.cleanup();
    }
  });

  test("Redocly's recommended rules: no error, no warning", async () => {
    const scratch = scratchDir();
    try {
      const file = join(scratch.dir, "served.json");
      await Bun.write(file, formatDocument(await servedDocument()));
      const report = (await lint(["redocly", "lint", file, "--config", "redocly.yaml", "--format", "json"])) as {
        totals: object;
        problems: Array<{ ruleId: string; message: string }>;
      };
      expect(report.problems.map(({ ruleId, message }) => `${ruleId}: ${message}`)).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    } finally {
      scratch.cleanup();
    }
  });
});
