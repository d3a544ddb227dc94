/**
 * The list route is compiled as synchronous (the hot path); a store call of its that fails
 * asynchronously must still become the Error body, on either engine: Elysia does not catch the
 * rejection of a promise a synchronous handler returns (found on PostgreSQL with a locked table,
 * where app.handle itself rejected and the real server answered 500).
 */
import { describe, expect, test } from "bun:test";
import { StoreUnavailable } from "../../src/core/failures";
import { STORE_FAILURE_LOG_EVERY_MS } from "../../src/http/errors";
import { expectError, makeTestApp } from "../support/helpers";

const PATHS = ["/plants?limit=5", "/plants?limit=5&tag=x", "/plants", "/plants?limit=5000"];

describe("a list whose store call fails after the handler returned", () => {
  for (const [kind, status, message] of [
    ["unreachable", 503, /cannot be reached/],
    ["timeout", 503, /did not answer in time/],
    ["busy", 503, /busy/],
  ] as const) {
    test(`${kind}: every shape of list answers ${status} with the Error body and the answer's own headers`, async () => {
      const t = await makeTestApp({ rateLimitPerMinute: 100 });
      const token = await t.tokenFor("alice");
      await t.createPlant("1", "Fern", token);
      const failing = () => Promise.reject(new StoreUnavailable(kind));
      t.stores.plants.listPage = failing;
      t.stores.plants.nthId = failing;
      for (const path of PATHS) {
        const response = await t.call("GET", path, { token });
        expect(await expectError(response, status)).toMatch(message);
        // As an error the route throws gets them: the budget it spent and when to retry.
        expect(response.headers.get("ratelimit")).toMatch(/^"per-token";r=\d+;t=0$/);
        expect(response.headers.get("retry-after")).not.toBeNull();
      }
    });
  }

  test("a store failure that lasts is logged once per STORE_FAILURE_LOG_EVERY_MS, the next line counting those not logged", async () => {
    let now = 1_800_000_000_000;
    const t = await makeTestApp({ now: () => now });
    const token = await t.tokenFor("alice");
    t.stores.plants.listPage = () => Promise.reject(new StoreUnavailable("unreachable"));
    const failures = () => t.logged.filter(({ message }) => message.startsWith("store failure")).map((e) => e.message);
    for (let i = 0; i < 10; i++) await expectError(await t.call("GET", "/plants?limit=5", { token }), 503);
    expect(failures()).toEqual(["store failure"]);
    now += STORE_FAILURE_LOG_EVERY_MS;
    await expectError(await t.call("GET", "/plants?limit=5", { token }), 503);
    expect(failures()).toEqual(["store failure", "store failure; 9 more since the last such line"]);
  });

  test("anything else is a logged 500 with the Error body, and the next list answers again", async () => {
    const t = await makeTestApp();
    const token = await t.tokenFor("alice");
    await t.createPlant("1", "Fern", token);
    const { listPage } = t.stores.plants;
    t.stores.plants.listPage = () => Promise.reject(new TypeError("a bug"));
    await expectError(await t.call("GET", "/plants?limit=5", { token }), 500);
    expect(t.logged.map((entry) => entry.message)).toContain("unhandled error");
    t.stores.plants.listPage = listPage;
    expect(await (await t.call("GET", "/plants?limit=5", { token })).json()).toEqual([{ name: "Fern" }]);
  });
});
