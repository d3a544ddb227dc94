import type { Database } from "bun:sqlite";

/** The longest a write waits for others to share its commit. */
const MAX_WAIT_MS = 1;

interface PendingWrite {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit. With synchronous=FULL every commit waits for an fsync, which blocks the event
 * loop; writes that arrive together share one transaction and one fsync, and each caller
 * still gets its own result, only once the commit is durable.
 *
 * Each write is a single statement, so a write that fails is undone by SQLite on its own and
 * the others go on. An error that ends the whole transaction (disk full, I/O) fails every
 * write of the batch that has not been committed: nothing is acknowledged that was not
 * committed.
 */
export function createGroupCommit(sqlite: Database, maxWaitMs = MAX_WAIT_MS) {
  let queue: PendingWrite[] = [];
  let sizeAtLastLook = 0;
  let firstQueuedAt = 0;

  /**
   * Commits once the batch stops growing: while each turn of the event loop brings more
   * writes (reads keep the loop busy and their clients send more), wait, at most `maxWaitMs`;
   * when a turn brings none (every writer is waiting for its answer), commit at once.
   */
  function commitWhenSettled() {
    if (queue.length > sizeAtLastLook && performance.now() - firstQueuedAt < maxWaitMs) {
      sizeAtLastLook = queue.length;
      setImmediate(commitWhenSettled);
      return;
    }
    flush();
  }

  function flush() {
    const batch = queue;
    queue = [];
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      sqlite.run("BEGIN IMMEDIATE");
      for (const pending of batch) {
        try {
          outcomes.push({ ok: true, value: pending.write() });
        } catch (error) {
          outcomes.push({ ok: false, error });
        }
        // Once the transaction is gone, later writes would autocommit one by one: stop here.
        if (!sqlite.inTransaction) throw new Error("the group transaction ended early; no write of it was committed");
      }
      sqlite.run("COMMIT");
    } catch (error) {
      if (sqlite.inTransaction) sqlite.run("ROLLBACK");
      for (const pending of batch) pending.reject(error);
      return;
    }
    batch.forEach((pending, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) pending.resolve(outcome.value);
      else pending.reject(outcome?.error);
    });
  }

  return {
    /** Runs `write` in the next group transaction; resolves once that transaction is committed. */
    run<T>(write: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        if (queue.length === 0) {
          firstQueuedAt = performance.now();
          sizeAtLastLook = 0;
          setImmediate(commitWhenSettled);
        }
        queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      });
    },
  };
}

export type GroupCommit = ReturnType<typeof createGroupCommit>;
