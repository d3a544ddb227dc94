import { describe, expect, test } from "bun:test";
import { parseJsonExact } from "../../src/http/json-body";
import { makeTestApp, onSqlite } from "../support/helpers";

describe("exact integers follow the schema type, not a key name", () => {
  test("the body reader keeps every integer past 2^53 exact, under any key and at any depth", () => {
    expect(parseJsonExact('{"other": 9223372036854775807, "deep": [{"n": -9223372036854775808}]}')).toEqual({
      other: 9223372036854775807n,
      deep: [{ n: -9223372036854775808n }],
    });
    expect(parseJsonExact('{"a": 9.2e18, "b": 7.0, "c": 12}')).toEqual({ a: 9200000000000000000n, b: 7, c: 12 });
  });

  test("a fraction JSON.parse would round to an integer is never an integer", () => {
    const parsed = parseJsonExact('{"a": 1e-400, "b": 1.0000000000000000001, "c": 0.5}') as Record<string, number>;
    expect(parsed.a).toBeNaN();
    expect(parsed.b).toBeNaN();
    expect(parsed.c).toBe(0.5);
  });

  // Reads the SQLite column straight through the driver and through Drizzle.
  test.if(onSqlite)(
    "an int64 column read back exactly, and a rounded read refused rather than turned into a wrong id",
    async () => {
      const t = await makeTestApp();
      await t.tokens.issue("alice"); // user 1, the plant's owner
      const { sqlite } = t;
      sqlite.run("INSERT INTO plants (owner_id, id, name) VALUES (1, 9223372036854775807, 'max')");
      const exact = sqlite.prepare("SELECT id FROM plants").safeIntegers(true).get() as { id: bigint };
      expect(exact.id).toBe(9223372036854775807n);
      expect(() => t.db.query.plants.findFirst().sync()).toThrow(/without safeIntegers/);
    },
  );
});
