import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { createGroupCommit } from "../src/db/group-commit";

/** An in-memory database that counts the transactions committed on it. */
function countingDatabase() {
  const sqlite = new Database(":memory:");
  sqlite.run("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  const statements: string[] = [];
  const run = sqlite.run.bind(sqlite);
  sqlite.run = ((query: string, ...rest: never[]) => {
    statements.push(query);
    return run(query, ...rest);
  }) as typeof sqlite.run;
  return { sqlite, statements };
}

describe("group commit", () => {
  test("writes issued together share one transaction, and each gets its own result", async () => {
    const { sqlite, statements } = countingDatabase();
    const writes = createGroupCommit(sqlite);
    const insert = sqlite.prepare("INSERT INTO t (id, v) VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING id");
    const results = await Promise.all(
      [1, 2, 3, 2, 4].map((id) => writes.run(() => insert.get(id, `v${id}`) as { id: number } | null)),
    );
    expect(results).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }, null, { id: 4 }]);
    expect(statements).toEqual(["BEGIN IMMEDIATE", "COMMIT"]);

    await writes.run(() => insert.get(5, "v5"));
    expect(statements).toEqual(["BEGIN IMMEDIATE", "COMMIT", "BEGIN IMMEDIATE", "COMMIT"]);
  });

  test("a write that fails fails alone; the others of its batch are committed", async () => {
    const { sqlite } = countingDatabase();
    const writes = createGroupCommit(sqlite);
    const insert = sqlite.prepare("INSERT INTO t (id, v) VALUES (?, ?)");
    const outcomes = await Promise.allSettled([
      writes.run(() => insert.run(1, "a")),
      writes.run(() => insert.run(1, "duplicate")),
      writes.run(() => insert.run(2, "b")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(sqlite.query("SELECT id, v FROM t ORDER BY id").all()).toEqual([
      { id: 1, v: "a" },
      { id: 2, v: "b" },
    ]);
  });

  test("an error that ends the transaction fails the whole batch and commits none of it", async () => {
    const { sqlite } = countingDatabase();
    const writes = createGroupCommit(sqlite);
    const insert = sqlite.prepare("INSERT INTO t (id, v) VALUES (?, ?)");
    const outcomes = await Promise.allSettled([
      writes.run(() => insert.run(1, "a")),
      writes.run(() => sqlite.run("ROLLBACK")),
      writes.run(() => insert.run(2, "b")),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(sqlite.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 0 });
    expect(sqlite.inTransaction).toBe(false);

    // The next batch works as usual.
    await writes.run(() => insert.run(3, "c"));
    expect(sqlite.query("SELECT id FROM t").all()).toEqual([{ id: 3 }]);
  });
});
