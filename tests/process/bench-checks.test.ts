import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { SQL } from "bun";
import { runBehaviourChecks } from "../../bench/checks";
import { freshPostgresDatabase, onPostgres } from "../support/helpers";
import { DIRECT, type RunningServer, runCli, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/**
 * The bench compares the service with its baseline and floor only after both pass
 * bench/checks.ts, so that each side does the same work per request. These tests hold every
 * contender of the engine under test to those checks (a floor that skipped a behaviour, such as
 * the next page's Link, would look faster than it is).
 */
const FLOOR = onPostgres ? "bench/baseline/postgres-server.ts" : "bench/baseline/server.ts";
const CONTENDERS: Array<{ name: string; command: string[]; env: Record<string, string> }> = [
  { name: "the service", command: DIRECT, env: {} },
  { name: "the like-for-like baseline", command: ["bun", FLOOR], env: {} },
  { name: "the bare floor", command: ["bun", FLOOR], env: { BASELINE_BARE: "1" } },
];

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function databaseUrl(): Promise<string> {
  if (onPostgres) return freshPostgresDatabase();
  const { dir, cleanup } = scratchDir();
  cleanups.push(cleanup);
  return join(dir, "bench.sqlite");
}

/** On PostgreSQL every side logs its changes as the service does, and stamps them within moments. */
async function loggedChanges(url: string): Promise<string[]> {
  const sql = new SQL(url, { max: 1 });
  try {
    await until(async () => (await sql`SELECT count(*)::int AS n FROM plant_change_inbox`)[0].n === 0, {
      what: "an empty change inbox",
    });
    return (await sql`SELECT DISTINCT type FROM plant_changes ORDER BY type`).map((row: { type: string }) => row.type);
  } finally {
    await sql.close();
  }
}

describe("the bench's behaviour checks", () => {
  for (const { name, command, env } of CONTENDERS) {
    test(`${name} passes them`, async () => {
      const database = { DATABASE_URL: await databaseUrl() };
      const token = async (user: string) =>
        (await runCli(["token", "create", "--user", user], database)).stdout.trim().split("\n").at(-1) as string;
      const [a, b] = [await token("bench-a"), await token("bench-b")];
      const server: RunningServer = await startServer({ ...database, ...env, LOG_LEVEL: "warn" }, { command });
      cleanups.push(() => server.stop());
      expect(await runBehaviourChecks(server.url, a, b)).toEqual([]);
      if (onPostgres) expect(await loggedChanges(database.DATABASE_URL)).toEqual(["plant.created", "plant.deleted"]);
    }, 30_000);
  }
});
