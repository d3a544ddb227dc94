import { beforeEach, describe, expect, test } from "bun:test";
import { expectError, makeTestApp, onSqlite, type TestApp } from "../support/helpers";

/** What a generic 500 message must not reveal. */
function expectGeneric(message: string) {
  for (const leak of [
    "SQLite",
    "sqlite",
    "SQL",
    "SELECT",
    "INSERT",
    "DELETE FROM",
    "no such table",
    "at ",
    ".ts",
    "/work/",
    "node_modules",
  ]) {
    expect(message).not.toContain(leak);
  }
}

describe("errors", () => {
  let t: TestApp;
  let token: string;

  beforeEach(async () => {
    t = await makeTestApp();
    token = await t.tokenFor("alice");
  });

  test("every error has the Error body with error equal to the HTTP status", async () => {
    await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } });
    const cases: Array<[number, Promise<Response>]> = [
      [400, t.call("POST", "/plants", { token, json: { id: "x", name: "Fern" } })],
      [400, t.call("POST", "/plants", { token, json: "{broken" })],
      [400, t.call("GET", "/plants?limit=-1", { token })],
      [400, t.call("DELETE", "/plants/abc", { token })],
      [401, t.call("GET", "/plants")],
      [401, t.call("GET", "/plants", { token: "pst_unknown" })],
      [404, t.call("DELETE", "/plants/2", { token })],
      [404, t.call("GET", "/no-such-route", { token })],
      [405, t.call("PUT", "/plants", { token })],
      [409, t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } })],
      [413, t.call("POST", "/plants", { token, json: JSON.stringify({ id: 2, name: "x".repeat(70_000) }) })],
      [
        415,
        t.call("POST", "/plants", {
          token,
          body: "id=1",
          headers: { "content-type": "application/x-www-form-urlencoded" },
        }),
      ],
    ];
    for (const [status, pending] of cases) await expectError(await pending, status);
  });

  test("a required field left out is named as required; one with a wrong value, by its rule", async () => {
    const message = async (method: string, path: string, json: unknown) =>
      expectError(await t.call(method, path, { token, json }), 400);
    expect(await message("POST", "/plants", { name: "Fern" })).toBe("id: is required");
    expect(await message("POST", "/plants", {})).toBe("id: is required");
    expect(await message("POST", "/plants", { id: 1 })).toBe("name: is required");
    expect(await message("PUT", "/plants/1", { tag: "x" })).toBe("name: is required");
    expect(await message("POST", "/webhooks", {})).toBe("url: is required");
    // A value that is there but wrong keeps its rule.
    expect(await message("POST", "/plants", { id: null, name: "Fern" })).toStartWith("id: must be an integer between");
    expect(await message("POST", "/plants", { id: 1, name: "" })).toBe("name: must be a string of 1 to 256 characters");
  });

  describe("unknown route", () => {
    test.each(["/", "/nope", "/plant", "/plants/1/extra", "/plantsx"])("GET %s is 404", async (path) => {
      await expectError(await t.call("GET", path, { token }), 404);
    });

    test("is 404 without a token too", async () => {
      await expectError(await t.call("GET", "/nope"), 404);
    });
  });

  describe("known path, wrong method", () => {
    test.each([
      ["PUT", "/plants", "GET, POST", { id: 1, name: "Fern" }],
      ["DELETE", "/plants", "GET, POST", undefined],
      ["PATCH", "/plants", "GET, POST", { name: "Fern" }],
      ["POST", "/plants/1", "GET, PUT, PATCH, DELETE", { id: 1, name: "Fern" }],
      // A path of its own: not the methods of /plants/:id, which it also fits.
      ["DELETE", "/plants/changes", "GET", undefined],
    ] as const)("%s %s is 405 with Allow: %s", async (method, path, allow, json) => {
      const response = await t.call(method, path, { token, json });
      expect(response.headers.get("allow")).toBe(allow);
      await expectError(response, 405);
    });

    test("a wrong method changes nothing", async () => {
      await t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } });
      await t.call("PUT", "/plants", { token, json: { id: 1, name: "Changed" } });
      await t.call("POST", "/plants/1", { token, json: { id: 1, name: "Changed" } });
      expect(await (await t.call("GET", "/plants", { token })).json()).toEqual([{ name: "Fern" }]);
    });
  });

  // The faults are made by closing the SQLite connection or dropping a table under the app.
  describe.if(onSqlite)("unexpected fault", () => {
    test("a closed database gives 500 with a generic message, and the detail goes to the log", async () => {
      t.sqlite.close(true);
      const message = await expectError(await t.call("GET", "/plants", { token }), 500);
      expectGeneric(message);
      expect(t.logged.length).toBeGreaterThan(0);
      expect(t.logged.some((entry) => entry.detail instanceof Error)).toBe(true);
    });

    test("a failing query gives 500 without stack, SQL or file path, and the detail goes to the log", async () => {
      t.sqlite.run("DROP TABLE plants");
      for (const pending of [
        t.call("GET", "/plants", { token }),
        t.call("POST", "/plants", { token, json: { id: 1, name: "Fern" } }),
        t.call("DELETE", "/plants/1", { token }),
      ]) {
        const response = await pending;
        const text = await response.clone().text();
        expectGeneric(text);
        expectGeneric([...response.headers.entries()].join("\n"));
        expectGeneric(await expectError(response, 500));
      }
      expect(t.logged).toHaveLength(3);
      for (const entry of t.logged) expect(String(entry.detail)).toContain("no such table: plants");
    });

    test("the 500 body is the same whatever the fault", async () => {
      t.sqlite.run("DROP TABLE plants");
      const first = await (await t.call("GET", "/plants", { token })).json();
      const second = await (await t.call("DELETE", "/plants/1", { token })).json();
      expect(second).toEqual(first);
    });
  });

  test("expected errors are not logged as faults", async () => {
    await t.call("GET", "/plants");
    await t.call("GET", "/plants?limit=x", { token });
    await t.call("GET", "/nope", { token });
    await t.call("DELETE", "/plants/1", { token });
    expect(t.logged).toEqual([]);
  });
});
