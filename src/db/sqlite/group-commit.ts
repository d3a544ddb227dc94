import type { Database } from "bun:sqlite";
import { type StoreFailureKind, StoreUnavailable, storeFailureKind } from "../../core/failures";
import { createWriteHealth } from "./write-health";

export interface GroupCommitOptions {
  /** MAX_IN_FLIGHT: client writes waiting at once, past which one is refused. */
  maxQueued?: number;
  /** WRITE_LOCK_TIMEOUT_MS: how long a write waits for another connection's write lock. */
  lockTimeoutMs?: number;
  onHealthChange?: (problem: StoreFailureKind | undefined, error?: unknown) => void;
  /** Ends a read transaction open on the same connection (snapshot.ts). */
  beforeBegin?: () => void;
}

interface PendingWrite {
  write: () => unknown;
  /** False for bookkeeping (a token's last use, a probe): it takes no client's place. */
  counted: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  queuedAt: number;
}

/** The longest a write waits for others to share its commit. */
const MAX_WAIT_MS = 1;
/** Lock retries back off from 1 ms to this, so a long-held lock costs a few polls a second. */
const MAX_LOCK_POLL_MS = 50;
/** Store problems that make writes fail until something changes outside the process. */
const LASTING: ReadonlySet<StoreFailureKind> = new Set(["full", "io", "corrupt"]);

/** Writes that arrive together share one transaction and fsync (docs/decisions/0001-group-commit.md). */
export function createGroupCommit(sqlite: Database, options: GroupCommitOptions = {}) {
  const { maxQueued = Number.POSITIVE_INFINITY, lockTimeoutMs = 5_000, onHealthChange } = options;
  sqlite.run("PRAGMA busy_timeout = 0");
  let queue: PendingWrite[] = [];
  let queuedCount = 0;
  let sizeAtLastLook = 0;
  let firstQueuedAt = 0;
  let lockPolls = 0;
  const health = createWriteHealth(sqlite, onHealthChange);

  /** Commits once a turn of the event loop brings no more writes, or after MAX_WAIT_MS. */
  function commitWhenSettled() {
    if (queue.length > sizeAtLastLook && performance.now() - firstQueuedAt < MAX_WAIT_MS) {
      sizeAtLastLook = queue.length;
      setImmediate(commitWhenSettled);
      return;
    }
    flush();
  }

  /** Refuses the writes that have waited too long for the lock; polls again for the rest. */
  function waitForLock(busy: unknown) {
    const now = performance.now();
    const waiting: PendingWrite[] = [];
    for (const pending of queue) {
      if (now - pending.queuedAt >= lockTimeoutMs) pending.reject(new StoreUnavailable("busy", { cause: busy }));
      else waiting.push(pending);
    }
    queue = waiting;
    queuedCount = waiting.filter((pending) => pending.counted).length;
    if (queue.length === 0) {
      lockPolls = 0;
      return;
    }
    setTimeout(flush, Math.min(2 ** lockPolls++, MAX_LOCK_POLL_MS));
  }

  function flush() {
    options.beforeBegin?.();
    try {
      sqlite.run("BEGIN IMMEDIATE");
    } catch (error) {
      if (storeFailureKind(error) === "busy") return waitForLock(error);
      return rejectAll(take(), error);
    }
    lockPolls = 0;
    const batch = take();
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      if (!health.fileInPlace()) {
        const moved = new Error(`the database file ${sqlite.filename} was deleted, moved or replaced while open`);
        throw new StoreUnavailable("io", { cause: moved });
      }
      for (const pending of batch) {
        try {
          outcomes.push({ ok: true, value: pending.write() });
        } catch (error) {
          outcomes.push({ ok: false, error: asStoreFailure(error) });
        }
        // Once the transaction is gone, later writes would autocommit one by one: stop here.
        if (!sqlite.inTransaction) throw lostTransaction(outcomes);
      }
      sqlite.run("COMMIT");
    } catch (error) {
      if (sqlite.inTransaction) sqlite.run("ROLLBACK");
      return rejectAll(batch, error);
    }
    if (batch.some((pending, i) => pending.counted && outcomes[i]?.ok)) health.set(undefined);
    batch.forEach((pending, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) pending.resolve(outcome.value);
      else pending.reject(outcome?.error);
    });
  }

  function take(): PendingWrite[] {
    const batch = queue;
    queue = [];
    queuedCount = 0;
    return batch;
  }

  function rejectAll(batch: PendingWrite[], error: unknown) {
    const failure = asStoreFailure(error);
    for (const pending of batch) pending.reject(failure);
  }

  /** A store failure (not one write's) sets readiness and reaches the client as its kind. */
  function asStoreFailure(error: unknown): unknown {
    const kind = storeFailureKind(error);
    if (kind === undefined) return error;
    if (LASTING.has(kind)) health.set(kind, error);
    return error instanceof StoreUnavailable ? error : new StoreUnavailable(kind, { cause: error });
  }

  function run<T>(write: () => T, { bookkeeping = false } = {}): Promise<T> {
    if (!bookkeeping && queuedCount >= maxQueued) return Promise.reject(new StoreUnavailable("capacity"));
    if (!bookkeeping) queuedCount++;
    return new Promise<T>((resolve, reject) => {
      const queuedAt = performance.now();
      // An empty queue has no commit on the way (take() and waitForLock empty it as they end one).
      if (queue.length === 0) {
        firstQueuedAt = queuedAt;
        sizeAtLastLook = 0;
        setImmediate(commitWhenSettled);
      }
      queue.push({ write, counted: !bookkeeping, resolve: resolve as (value: unknown) => void, reject, queuedAt });
    });
  }

  return {
    run,
    /** Resolves once every write queued so far has been committed or refused. */
    drain: (): Promise<unknown> =>
      queue.length === 0 ? Promise.resolve() : run(() => undefined, { bookkeeping: true }).catch(() => {}),

    /** Why writes fail now, if they do; while it is space or I/O, probes so it clears with the disk. */
    problem(): StoreFailureKind | undefined {
      if (health.probeDue())
        run(health.probe, { bookkeeping: true }).then(
          () => health.set(undefined),
          () => {},
        );
      return health.current();
    },
  };
}

function lostTransaction(outcomes: Array<{ ok: boolean; error?: unknown }>): unknown {
  const last = outcomes[outcomes.length - 1];
  return last && !last.ok ? last.error : new Error("the group transaction ended early; no write of it was committed");
}
