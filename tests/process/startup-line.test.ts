import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { ENGINE, emptyPostgresDatabase, onPostgres } from "../support/helpers";
import { type RunningServer, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/*
 * What the real server says as it starts, on the engine under test: which database it uses
 * (never a password), and a warning when WEBHOOK_ALLOW_PRIVATE is on.
 */

let server: RunningServer | undefined;
let scratch: ReturnType<typeof scratchDir> | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
  scratch?.cleanup();
  scratch = undefined;
});

/** The password the PostgreSQL URL carries (the test cluster trusts any); it must appear nowhere. */
const PASSWORD = `pw-${crypto.randomUUID()}`;

/** A database for a start on the engine under test, and how the line must name it. */
async function database(): Promise<{ url: string; shown: string; engine: string }> {
  if (onPostgres) {
    const url = new URL(await emptyPostgresDatabase());
    url.username ||= "postgres";
    url.password = PASSWORD;
    const shown = Object.assign(new URL(url), { password: "***" }).toString();
    return { url: url.toString(), shown: `PostgreSQL at ${shown}`, engine: "postgres" };
  }
  scratch = scratchDir();
  const path = join(scratch.dir, "plants.sqlite");
  return { url: path, shown: `SQLite at ${path}`, engine: "sqlite" };
}

/** The JSON log lines a start printed before and with its "listening" line. */
const logLines = (output: string) =>
  output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe(`the start-up lines on ${ENGINE}`, () => {
  test("the listening line names the engine and the database, without its password", async () => {
    const { url, shown, engine } = await database();
    server = await startServer({ DATABASE_URL: url });
    const listening = logLines(server.startupOutput).find((line) => String(line.msg).includes("listening on"));
    expect(listening?.msg).toContain(`(${shown}; Swagger UI at /swagger)`);
    expect(listening).toMatchObject({ engine, database: shown.replace(/^\S+ at /, "") });
    // No warning about private webhook addresses when the setting is off.
    expect(server.startupOutput).not.toContain("WEBHOOK_ALLOW_PRIVATE");
    await server.stop();
    const output = await server.output();
    server = undefined;
    expect(output).not.toContain(PASSWORD);
  });

  test("WEBHOOK_ALLOW_PRIVATE=true is warned about once, at start", async () => {
    const { url } = await database();
    server = await startServer({ DATABASE_URL: url, WEBHOOK_ALLOW_PRIVATE: "true" });
    const warnings = logLines(server.startupOutput).filter((line) => line.level === "warn");
    expect(warnings).toEqual([
      expect.objectContaining({
        webhookAllowPrivate: true,
        msg: expect.stringContaining("WEBHOOK_ALLOW_PRIVATE is on"),
      }),
    ]);
  });
});
