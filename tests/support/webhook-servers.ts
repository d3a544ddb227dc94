import { afterEach } from "bun:test";
import { join } from "node:path";
import { freshPostgresDatabase, onPostgres } from "./helpers";
import { DIRECT, type RunningServer, scratchDir, startServer } from "./process";

/**
 * Real servers for webhook process tests, on a fresh database of the engine under test, with
 * private receivers allowed; everything registered in `cleanups` goes after each test, last first.
 */
export function webhookServers() {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function databaseUrl(): Promise<string> {
    if (onPostgres) return freshPostgresDatabase();
    const scratch = scratchDir();
    cleanups.push(scratch.cleanup);
    return join(scratch.dir, "plants.sqlite");
  }

  async function server(env: Record<string, string>): Promise<RunningServer> {
    const started = await startServer({ WEBHOOK_ALLOW_PRIVATE: "true", ...env }, { command: DIRECT });
    cleanups.push(async () => {
      started.kill("SIGKILL");
      await started.exited;
    });
    return started;
  }

  return { cleanups, databaseUrl, server };
}
