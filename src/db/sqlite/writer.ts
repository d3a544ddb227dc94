import type { Database, SQLQueryBindings, Statement } from "bun:sqlite";
import { createGroupCommit, type GroupCommitOptions } from "./group-commit";
import { readSnapshot, type TurnEnd } from "./snapshot";

/** A write is a statement of queries.ts and its parameters, prepared once per connection. */
export interface Write {
  sql: string;
  mode: "get" | "all" | "run";
  params: SQLQueryBindings[];
  /** Integers read back as bigints (a plant's id past 2^53). */
  exact?: boolean;
}

/** Statements that stand or fall together, in a savepoint; the result of step `answer` (the last by default) is the answer. */
export interface Steps {
  steps: Write[];
  answer?: number;
}

/** Counts the rows a bookkeeping `… RETURNING` write returns. */
export const countRows = async (writes: Writer, sql: string, params: SQLQueryBindings[]) =>
  (await writes.run<unknown[]>({ sql, mode: "all", params }, { bookkeeping: true })).length;

export type Writer = ReturnType<typeof createWriter>;

function statementRunner(sqlite: Database) {
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
  // Prepared once: every create and delete runs in steps.
  const savepoint = sqlite.prepare("SAVEPOINT steps");
  const release = sqlite.prepare("RELEASE steps");
  const rollback = sqlite.prepare("ROLLBACK TO steps");
  return (write: Write | Steps): unknown => {
    if (!("steps" in write)) return runOne(write);
    savepoint.run();
    try {
      const results = write.steps.map(runOne);
      release.run();
      return results[write.answer ?? results.length - 1];
    } catch (error) {
      // An error that ended the transaction (disk full, I/O) took the savepoint with it.
      if (sqlite.inTransaction) {
        rollback.run();
        release.run();
      }
      throw error;
    }
  };
}

/** Group commit on the store's own connection (docs/decisions/0001-group-commit.md). */
export function createWriter(sqlite: Database, options: GroupCommitOptions, atTurnEnd?: TurnEnd) {
  const runStatement = statementRunner(sqlite);
  const reads = readSnapshot(sqlite, atTurnEnd);
  const commit = createGroupCommit(sqlite, { ...options, beforeBegin: reads.end });
  return {
    /** Resolves once committed; `bookkeeping` writes are not counted against the cap. */
    run: <T = unknown>(write: Write | Steps, runOptions?: { bookkeeping?: boolean }) =>
      commit.run(() => runStatement(write) as T, runOptions),
    /** Before a read on the store's connection: the turn's reads share one snapshot, ended by a commit (snapshot.ts). */
    snapshot: reads.enter,
    problem: commit.problem,
    close: async () => {
      await commit.drain();
      reads.end();
    },
  };
}
