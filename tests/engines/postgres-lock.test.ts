/**
 * PostgreSQL with its plants table locked by another session (a migration by hand, a
 * `LOCK TABLE` in a psql shell): requests wait at most the statement timeout, past
 * MAX_IN_FLIGHT they are refused at once, and nothing is lost or changed.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { expectError, makeTestApp, onPostgres } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

describe.if(onPostgres)("a lock on plants held by another session (PostgreSQL)", () => {
  test("waiting requests get 503 busy at the statement timeout, those past MAX_IN_FLIGHT a 503 at once; the data is unchanged and the service answers again once the lock is gone", async () => {
    const t = await makeTestApp({ maxInFlight: 4, statementTimeoutMs: 500 });
    const token = await t.tokenFor("alice");
    await t.createPlant("1", "Fern", token);
    const other = new SQL(t.postgresUrl as string, { max: 1 });
    const session = await other.reserve();
    try {
      await session`BEGIN`;
      await session`LOCK TABLE plants IN ACCESS EXCLUSIVE MODE`;
      // Four calls wait on the lock (each request makes one store call at a time).
      const waiting = [
        t.call("GET", "/plants", { token }),
        t.call("POST", "/plants", { token, json: '{"id":2,"name":"Ivy"}' }),
        t.call("DELETE", "/plants/1", { token }),
        t.call("GET", "/plants/1", { token }),
      ];
      // Authentication reads tokens, not plants, so each request gets as far as its plants call:
      // poll until all four hold a place, then a fifth is refused without waiting.
      let refused: Response | undefined;
      const deadline = performance.now() + 5_000;
      while (performance.now() < deadline) {
        const fifth = await t.call("GET", "/plants", { token });
        if (fifth.status === 503 && /capacity/.test(await fifth.clone().text())) {
          refused = fifth;
          break;
        }
      }
      expect(refused).toBeDefined();
      expect(await expectError(refused as Response, 503)).toMatch(/capacity/);
      expect(refused?.headers.get("retry-after")).toBe("1");
      for (const response of await Promise.all(waiting)) {
        expect(await expectError(response, 503)).toMatch(/busy/);
      }
    } finally {
      await session`ROLLBACK`;
      session.release();
      await other.close();
    }
    expect(await (await t.call("GET", "/plants", { token })).json()).toEqual([{ name: "Fern" }]);
    expect((await t.call("POST", "/plants", { token, json: '{"id":2,"name":"Ivy"}' })).status).toBe(200);
  });
});
