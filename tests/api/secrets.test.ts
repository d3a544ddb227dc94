import { describe, expect, test } from "bun:test";
import { DrizzleQueryError } from "drizzle-orm";
import { faultDetail, faultSummary } from "../../src/core/fault";
import { hashToken } from "../../src/core/tokens";
import { makeTestApp, onSqlite } from "../support/helpers";

describe("secrets stay secret", () => {
  test.if(onSqlite)("a fault's log entry holds neither the token nor the values of the failed query", async () => {
    const t = await makeTestApp();
    const token = await t.tokenFor("alice");
    t.sqlite.run("DROP TABLE plants");
    const response = await t.call("POST", "/plants", {
      token,
      json: { id: 1, name: "body-marker-name", tag: "body-marker-tag" },
    });
    expect(response.status).toBe(500);
    expect(t.logged).toHaveLength(1);
    const logged = JSON.stringify(t.logged, (_, value) =>
      value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value,
    );
    expect(logged).toContain("no such table");
    for (const secret of [token, hashToken(token), "body-marker"]) expect(logged).not.toContain(secret);
  });

  test("Drizzle's query errors are logged without their parameters", () => {
    const error = new DrizzleQueryError(
      "insert into tokens values (?, ?)",
      ["hash-marker", "name-marker"],
      new Error("boom"),
    );
    const detail = JSON.stringify(faultDetail(error));
    expect(detail).toContain("insert into tokens values (?, ?)");
    expect(detail).toContain("boom");
    expect(detail).not.toContain("marker");
    expect(faultSummary(error)).toBe("Error: boom");
  });
});
