import type { Database, SQLQueryBindings, Statement } from "bun:sqlite";
import type { StoreFailureKind } from "../../core/failures";
import { createGroupCommit, type GroupCommitOptions } from "./group-commit";

/** One write: a statement of queries.ts, how its result is read, and its parameters. */
export interface Write {
  sql: string;
  mode: "get" | "all" | "run";
  params: SQLQueryBindings[];
  /** Integers read back as bigints (a plant's id past 2^53); others as numbers. */
  exact?: boolean;
}

/**
 * Statements that stand or fall together (a keyed create: the plant and its kept answer): run
 * in a savepoint of the group transaction, so one that fails undoes the others and no more;
 * the last one's result is the answer.
 */
export interface Steps {
  steps: Write[];
}

/**
 * Where the stores send their writes: group commit, on a writer thread of its own for a file
 * (writer-thread.ts, docs/decisions/0001-group-commit.md) or on this thread for `:memory:`,
 * which no other connection can open. A write is data, not a closure, so it can cross threads.
 */
export interface Writer {
  /** Runs `write` in the next group transaction; resolves once it is committed. */
  run<T = unknown>(write: Write | Steps, options?: { bookkeeping?: boolean }): Promise<T>;
  /** Why writes are failing now (space, I/O, damage), if they are; probes while it lasts. */
  problem(): StoreFailureKind | undefined;
  /** Waits for the writes queued, then lets go of the writer's connection. */
  close(): Promise<void>;
}

/** Runs writes on `sqlite`, each statement prepared once. */
export function statementRunner(sqlite: Database) {
  const prepared = new Map<string, Statement>();
  const runOne = ({ sql, mode, params, exact = false }: Write): unknown => {
    let statement = prepared.get(sql);
    if (!statement) {
      statement = sqlite.prepare(sql).safeIntegers(exact);
      prepared.set(sql, statement);
    }
    if (mode === "get") return statement.get(...params);
    if (mode === "all") return statement.all(...params);
    statement.run(...params);
    return undefined;
  };
  return (write: Write | Steps): unknown => {
    if (!("steps" in write)) return runOne(write);
    sqlite.run("SAVEPOINT steps");
    try {
      let result: unknown;
      for (const step of write.steps) result = runOne(step);
      sqlite.run("RELEASE steps");
      return result;
    } catch (error) {
      // An error that ended the transaction (disk full, I/O) took the savepoint with it.
      if (sqlite.inTransaction) {
        sqlite.run("ROLLBACK TO steps");
        sqlite.run("RELEASE steps");
      }
      throw error;
    }
  };
}

/** Group commit on the caller's own connection and thread. */
export function inThreadWriter(sqlite: Database, options: GroupCommitOptions): Writer {
  const runStatement = statementRunner(sqlite);
  const commit = createGroupCommit(sqlite, options);
  return {
    run: <T>(write: Write | Steps, runOptions?: { bookkeeping?: boolean }) =>
      commit.run(() => runStatement(write) as T, runOptions),
    problem: commit.problem,
    close: async () => {
      await commit.drain();
    },
  };
}
