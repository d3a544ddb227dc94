import { Database } from "bun:sqlite";
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StoreUnavailable } from "../../src/core/failures";
import { createGroupCommit } from "../../src/db/sqlite/group-commit";
import { onSqlite } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

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

describe.if(onSqlite)("group commit", () => {
  test("writes issued together share one transaction, and each gets its own result", async () => {
    const { sqlite, statements } = countingDatabase();
    const writes = createGroupCommit(sqlite);
    statements.length = 0;
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

  test("past maxQueued writes waiting for their commit, a write is refused at once as 'capacity'", async () => {
    const { sqlite } = countingDatabase();
    const writes = createGroupCommit(sqlite, { maxQueued: 2 });
    const insert = sqlite.prepare("INSERT INTO t (id, v) VALUES (?, ?)");
    const outcomes = await Promise.allSettled([1, 2, 3].map((id) => writes.run(() => insert.run(id, "v"))));
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ kind: "capacity" });
    expect(sqlite.query("SELECT id FROM t ORDER BY id").all()).toEqual([{ id: 1 }, { id: 2 }]);
  });

  test("a disk-full failure is reported as 'full' until a commit succeeds again", async () => {
    const { sqlite } = countingDatabase();
    const changes: unknown[] = [];
    const writes = createGroupCommit(sqlite, { onHealthChange: (problem) => changes.push(problem) });
    const problem = writes.problem;
    const full = Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
    const failed = await writes
      .run(() => {
        // What SQLite does when the disk fills mid-transaction: the transaction is rolled back.
        sqlite.run("ROLLBACK");
        throw full;
      })
      .catch((error) => error);
    expect(failed).toBeInstanceOf(StoreUnavailable);
    expect(failed.kind).toBe("full");
    // Asking for the problem also tries a write that changes nothing; once it commits, all is well.
    expect(problem()).toBe("full");
    const deadline = performance.now() + 5_000;
    while (problem() !== undefined && performance.now() < deadline) await Bun.sleep(5);
    expect(problem()).toBeUndefined();
    expect(changes).toEqual(["full", undefined]);
  });
});

describe.if(onSqlite)("group commit and a write lock held by another connection", () => {
  function fileDatabases() {
    const dir = mkdtempSync(join(tmpdir(), "plant-store-lock-"));
    const path = join(dir, "db.sqlite");
    const ours = new Database(path, { create: true });
    ours.run("PRAGMA journal_mode = WAL");
    ours.run("CREATE TABLE t (id INTEGER PRIMARY KEY)");
    const theirs = new Database(path);
    return { ours, theirs, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
  }

  test("writes wait without blocking the event loop, and commit once the lock is released", async () => {
    const { ours, theirs, cleanup } = fileDatabases();
    try {
      const writes = createGroupCommit(ours, { lockTimeoutMs: 10_000 });
      theirs.run("BEGIN IMMEDIATE");
      let settled = false;
      const write = writes
        .run(() => ours.run("INSERT INTO t (id) VALUES (1)"))
        .finally(() => {
          settled = true;
        });
      // Timers keep firing while the write waits: nothing waits for the lock synchronously.
      let ticks = 0;
      const deadline = performance.now() + 5_000;
      while (ticks < 20 && performance.now() < deadline) {
        await Bun.sleep(5);
        ticks++;
      }
      expect(ticks).toBe(20);
      expect(settled).toBe(false);
      // Reads go on meanwhile (WAL).
      expect(ours.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 0 });
      theirs.run("COMMIT");
      await write;
      expect(ours.query("SELECT id FROM t").all()).toEqual([{ id: 1 }]);
    } finally {
      ours.close();
      theirs.close();
      cleanup();
    }
  });

  test("a write that waits past lockTimeoutMs is refused as 'busy' and nothing of it is committed", async () => {
    const { ours, theirs, cleanup } = fileDatabases();
    try {
      const writes = createGroupCommit(ours, { lockTimeoutMs: 100 });
      theirs.run("BEGIN IMMEDIATE");
      const failed = await writes.run(() => ours.run("INSERT INTO t (id) VALUES (1)")).catch((error) => error);
      expect(failed).toBeInstanceOf(StoreUnavailable);
      expect(failed.kind).toBe("busy");
      theirs.run("COMMIT");
      expect(ours.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 0 });
      // The next write goes through as usual.
      await writes.run(() => ours.run("INSERT INTO t (id) VALUES (2)"));
      expect(ours.query("SELECT id FROM t").all()).toEqual([{ id: 2 }]);
    } finally {
      ours.close();
      theirs.close();
      cleanup();
    }
  });
});
