/** The hot read route is compiled synchronous on SQLite, so a list costs no promise. */
import { describe, expect, test } from "bun:test";
import { makeTestApp, onSqlite } from "./helpers";

// On PostgreSQL every read is a round trip, so the route is async there by nature.
describe.if(onSqlite)("the hot read route", () => {
  test("GET /plants compiles to a synchronous handler (Elysia's async guess did not fire)", async () => {
    const { app, call } = await makeTestApp();
    // Routes compile on first use.
    expect((await call("GET", "/plants")).status).toBe(401);
    const routes = (
      app as unknown as { router: { history: Array<{ method: string; path: string; compile(): unknown }> } }
    ).router.history;
    const list = routes.find((route) => route.method === "GET" && route.path === "/plants");
    const create = routes.find((route) => route.method === "POST" && route.path === "/plants");
    expect((list as (typeof routes)[0]).compile()?.constructor.name).toBe("Function");
    // The guard can fail: a route that awaits compiles to an AsyncFunction.
    expect((create as (typeof routes)[0]).compile()?.constructor.name).toBe("AsyncFunction");
  });
});
