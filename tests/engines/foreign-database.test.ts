import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { MIGRATIONS } from "../../src/db/migrations";
import { openDatabase } from "../../src/db/sqlite/client";
import { ForeignDatabaseError } from "../../src/db/sqlite/ownership";
import { onSqlite } from "../support/helpers";
import { scratchDir } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

let scratch: ReturnType<typeof scratchDir>;
beforeEach(() => {
  scratch = scratchDir();
});
afterEach(() => scratch.cleanup());

/** A file holding what `statements` create, nothing of ours. */
function foreignFile(...statements: string[]): string {
  const path = join(scratch.dir, "other.sqlite");
  const other = new Database(path);
  for (const statement of statements) other.run(statement);
  other.close();
  return path;
}

function refusal(path: string): string {
  try {
    openDatabase({ path, synchronous: "FULL" }).sqlite.close();
  } catch (error) {
    expect(error).toBeInstanceOf(ForeignDatabaseError);
    return (error as Error).message;
  }
  throw new Error("the database was accepted");
}

const found = (path: string, what: string) =>
  `the database at ${path} is not a Plant Store database: it holds ${what} and no migrations table; point DATABASE_URL at a new file or at a Plant Store database`;

describe.if(onSqlite)("whose database it is", () => {
  test("a new file and an empty existing file are ours to fill", () => {
    const empty = join(scratch.dir, "empty.sqlite");
    writeFileSync(empty, "");
    for (const path of [join(scratch.dir, "new.sqlite"), empty, ":memory:"]) {
      const { sqlite } = openDatabase({ path, synchronous: "FULL" });
      expect(sqlite.query("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual({
        n: MIGRATIONS.sqlite.length,
      });
      sqlite.close();
    }
  });

  test("a database with our migrations table is ours, whatever else it holds", () => {
    const path = join(scratch.dir, "ours.sqlite");
    openDatabase({ path, synchronous: "FULL" }).sqlite.close();
    const extra = new Database(path);
    extra.run("CREATE TABLE notes (text TEXT)");
    extra.close();
    openDatabase({ path, synchronous: "FULL" }).sqlite.close();
  });

  test("names at most three objects, then how many more; SQLite's own objects are not counted", () => {
    const path = foreignFile(
      "CREATE TABLE a (id INTEGER PRIMARY KEY AUTOINCREMENT, b TEXT UNIQUE)",
      "CREATE VIEW v AS SELECT * FROM a",
      "CREATE INDEX a_b ON a (b)",
      "CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END",
      "CREATE TABLE z (y TEXT)",
    );
    expect(refusal(path)).toBe(found(path, 'table "a", view "v", index "a_b" (and 2 more)'));
  });

  test("a hostile name stays one line: quotes, line breaks and terminal controls escaped, long names cut", () => {
    const path = foreignFile(
      `CREATE TABLE "a""b\nc\u001b[31m\u202e" (y TEXT)`,
      `CREATE TABLE "${"n".repeat(500)}" (y TEXT)`,
    );
    expect(refusal(path)).toBe(found(path, `table "a\\"b\\nc\\u001b[31m\\u202e", table "${"n".repeat(40)}…"`));
  });
});
