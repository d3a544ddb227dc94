import type { Database } from "bun:sqlite";
import type { StoreFailureKind } from "../store-errors";
import { createGroupCommit, type GroupCommitOptions } from "./group-commit";
import { prepareWrites, type WriteArgs, type WriteName, type WriteResult, type WriteSql } from "./write-statements";

/**
 * Where the stores send their writes: a group commit, on this thread (`:memory:` databases,
 * which no other connection can open) or on a writer thread of its own (writer-worker.ts).
 */
export interface Writer {
  /** "worker" when commits (and their fsyncs) run off the event loop. */
  readonly thread: "main" | "worker";
  /**
   * Runs the named write in the next group transaction; resolves once it is committed.
   * `bookkeeping` writes are not counted against the cap on queued writes.
   */
  run<N extends WriteName>(name: N, args: WriteArgs<N>, options?: { bookkeeping?: boolean }): Promise<WriteResult<N>>;
  /** Why writes are failing now (space, I/O, damage), if they are; see GroupCommit.problem. */
  problem(): StoreFailureKind | undefined;
  /** Waits for the writes queued, then lets go of the writer's connection. */
  close(): Promise<void>;
}

/** Group commit on the caller's own connection and thread. */
export function inThreadWriter(sqlite: Database, texts: WriteSql, options: GroupCommitOptions): Writer {
  const runWrite = prepareWrites(sqlite, texts);
  const commit = createGroupCommit(sqlite, options);
  return {
    thread: "main",
    run: (name, args, runOptions) => commit.run(() => runWrite(name, args), runOptions),
    problem: commit.problem,
    close: async () => {},
  };
}
