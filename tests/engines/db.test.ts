import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { openDatabase } from "../../src/db/sqlite/client";
import { onSqlite } from "../support/helpers";
import { scratchDir } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

let scratch: ReturnType<typeof scratchDir>;
beforeEach(async () => {
  scratch = scratchDir();
});
afterEach(() => scratch.cleanup());

// Pragmas, SQLite files and their migrations table: SQLite's own.
describe.if(onSqlite)("the SQLite database connection", () => {
  test("opens a file in WAL mode with the configured synchronous level, foreign keys and a busy timeout", () => {
    const { sqlite } = openDatabase({ path: join(scratch.dir, "a.sqlite"), synchronous: "FULL" });
    expect(sqlite.query("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    expect(sqlite.query("PRAGMA synchronous").get()).toEqual({ synchronous: 2 });
    expect(sqlite.query("PRAGMA foreign_keys").get()).toEqual({ foreign_keys: 1 });
    expect(sqlite.query("PRAGMA busy_timeout").get()).toEqual({ timeout: 5000 });
    sqlite.close();

    const normal = openDatabase({ path: join(scratch.dir, "a.sqlite"), synchronous: "NORMAL" });
    expect(normal.sqlite.query("PRAGMA synchronous").get()).toEqual({ synchronous: 1 });
    normal.sqlite.close();
  });

  test("applies the migrations once: opening again changes nothing and keeps the data", () => {
    const path = join(scratch.dir, "b.sqlite");
    const first = openDatabase({ path, synchronous: "FULL" });
    first.sqlite.run("INSERT INTO users (name, created_at) VALUES ('kept', 0)");
    const applied = first.sqlite.query("SELECT hash FROM __drizzle_migrations").all();
    expect(applied.length).toBeGreaterThan(0);
    first.sqlite.close();

    const second = openDatabase({ path, synchronous: "FULL" });
    expect(second.sqlite.query("SELECT hash FROM __drizzle_migrations").all()).toEqual(applied);
    expect(second.sqlite.query("SELECT name FROM users").all()).toEqual([{ name: "kept" }]);
    second.sqlite.close();
  });

  test("stores plant ids as exact 64-bit integers, unique per owner", () => {
    const path = join(scratch.dir, "c.sqlite");
    const { sqlite } = openDatabase({ path, synchronous: "FULL" });
    sqlite.run("INSERT INTO users (id, name, created_at) VALUES (1, 'a', 0), (2, 'b', 0)");
    const insert = sqlite.prepare("INSERT INTO plants (owner_id, id, name) VALUES (?, ?, 'p')");
    insert.run(1, 9223372036854775807n);
    insert.run(1, 9223372036854775806n);
    insert.run(2, 9223372036854775807n);
    expect(() => insert.run(1, 9223372036854775807n)).toThrow(/UNIQUE/);
    expect(() => insert.run(99, 1)).toThrow(/FOREIGN KEY/);
    sqlite.close();

    const reader = new Database(path, { safeIntegers: true, readonly: true });
    expect(reader.query("SELECT owner_id, id FROM plants ORDER BY owner_id, id").values()).toEqual([
      [1n, 9223372036854775806n],
      [1n, 9223372036854775807n],
      [2n, 9223372036854775807n],
    ]);
    reader.close();
  });
});
