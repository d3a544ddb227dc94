import type { Database } from "bun:sqlite";
import type { StoreFailureKind } from "../../core/failures";
import { createGroupCommit, type GroupCommitOptions } from "./group-commit";
import { prepareWrites, type WriteArgs, type WriteName, type WriteResult, type WriteSql } from "./write-statements";

/**
 * Where the stores send their writes: a group commit, on this thread (`:memory:` databases,
 * which no other connection can open) or on a writer thread of its own (writer-worker.ts).
 */
export interface Writer {
  /**
   * Runs the named write in the next group transaction; resolves once it is committed.
   * `bookkeeping` writes are not counted against the cap on queued writes.
   */
  run<N extends WriteName>(name: N, args: WriteArgs<N>, options?: { bookkeeping?: boolean }): Promise<WriteResult<N>>;
  /**
   * Why writes are failing now (space, I/O, damage), if they are. While it is space or I/O, a
   * write that changes nothing is tried now and then (probing), so the answer turns healthy
   * once the disk does, without waiting for a client's write.
   */
  problem(): StoreFailureKind | undefined;
  /** Waits for the writes queued, then lets go of the writer's connection. */
  close(): Promise<void>;
}

/** While writes fail for lack of space or I/O, a probe write is tried at most this often. */
const PROBE_EVERY_MS = 1_000;

/** Writer.problem for either writer: `current` is what the last commit said. */
export function probing(current: () => StoreFailureKind | undefined, run: Writer["run"]): Writer["problem"] {
  let probedAt = Number.NEGATIVE_INFINITY;
  return () => {
    const problem = current();
    const now = performance.now();
    if ((problem === "full" || problem === "io") && now - probedAt >= PROBE_EVERY_MS) {
      probedAt = now;
      run("probe", [], { bookkeeping: true }).catch(() => {});
    }
    return problem;
  };
}

/** Group commit on the caller's own connection and thread. */
export function inThreadWriter(sqlite: Database, texts: WriteSql, options: GroupCommitOptions): Writer {
  const runWrite = prepareWrites(sqlite, texts);
  const commit = createGroupCommit(sqlite, options);
  const run: Writer["run"] = (name, args, runOptions) => commit.run(() => runWrite(name, args), runOptions);
  return { run, problem: probing(commit.problem, run), close: async () => {} };
}
