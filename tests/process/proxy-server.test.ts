/**
 * The server behind a reverse proxy: every request comes from 127.0.0.1 (this test plays the
 * proxy) with the client in X-Forwarded-For. The same rule in process: tests/api/rate-limit.test.ts.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { emptyPostgresDatabase, expectError, onPostgres } from "../support/helpers";
import { type RunningServer, scratchDir, startServer } from "../support/process";
import { openRaw } from "../support/raw-http";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { bootstrapToken } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function databaseUrl(): Promise<string> {
  if (onPostgres) return emptyPostgresDatabase();
  const { dir, cleanup } = scratchDir();
  cleanups.push(cleanup);
  return join(dir, "plants.sqlite");
}

describe("behind a reverse proxy (TRUST_PROXY=127.0.0.1)", () => {
  test("one client spending the failure budget locks out neither another client nor a valid token", async () => {
    const server: RunningServer = await startServer({
      DATABASE_URL: await databaseUrl(),
      TRUST_PROXY: "127.0.0.1",
      AUTH_FAILURES_PER_MINUTE: "5",
    });
    cleanups.push(() => server.stop());
    const token = bootstrapToken(server);
    const viaProxy = (client: string, bearer: string) =>
      fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${bearer}`, "x-forwarded-for": client } });

    const guesses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const response = await viaProxy("203.0.113.66", `pst_guess${i}`);
      guesses.push(response.status);
      if (response.status === 429) {
        expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        await expectError(response, 429);
      } else await response.body?.cancel();
    }
    expect(guesses).toEqual([401, 401, 401, 401, 401, 429, 429]);

    // Another client behind the same proxy: its mistakes are its own, its token is served.
    expect((await viaProxy("198.51.100.20", "pst_typo")).status).toBe(401);
    expect((await viaProxy("198.51.100.20", token)).status).toBe(200);
    // A valid token from the spent client is served too.
    const served = await viaProxy("203.0.113.66", token);
    expect(served.status).toBe(200);
    expect(await served.json()).toEqual([]);

    // Two X-Forwarded-For lines are one list: the right-most client is the spent one.
    const raw = await openRaw(server.url);
    await raw.write(
      "GET /plants HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer pst_guess\r\n" +
        "X-Forwarded-For: 198.51.100.20\r\nX-Forwarded-For: 203.0.113.66\r\nConnection: close\r\n\r\n",
    );
    expect((await raw.response()).status).toBe(429);
    await raw.end();

    // The access log names the client each failure was counted for.
    await server.waitForOutput(/"status":401[^\n]*"client":"198\.51\.100\.20"/);
    await server.waitForOutput(/"status":429[^\n]*"client":"203\.0\.113\.66"/);
  });
});
