import { type FaultLog, faultDetail } from "./fault";
import { systemTimers, type Timers } from "./timers";

export interface PrunerOptions {
  /** What is pruned, as the log names it. */
  what: string;
  /**
   * Removes up to `limit` of the oldest records made before `before` (ms since the epoch), in
   * one bounded statement, and says how many it removed.
   */
  prune(before: number, limit: number): Promise<number>;
  /** How long a record is kept; 0 keeps every record (the pruner never starts). */
  keepMs: number;
  batchSize: number;
  /** The wait after a full batch: the database's other work goes between two batches. */
  pauseMs: number;
  /** The wait after a short batch (nothing more is old enough) or a failed one. */
  everyMs: number;
  log: FaultLog;
  /** The wall clock ages are measured on. */
  clock?: () => number;
  timers?: Timers;
}

/**
 * Removes records past their age in small batches, off every request's path: a batch, a pause,
 * the next, until a batch comes back short; then again after `everyMs`. One batch is one short
 * statement, so the database never holds a long one; several instances may prune at once where
 * the engine's batch skips rows another is removing. A failure is logged once per streak.
 */
export function createPruner({
  what,
  prune,
  keepMs,
  batchSize,
  pauseMs,
  everyMs,
  log,
  clock = Date.now,
  timers = systemTimers,
}: PrunerOptions) {
  let stopped = true;
  let failing = false;
  /** The batch under way: stop() waits for it. */
  let batch: Promise<void> | undefined;

  function schedule(ms: number) {
    if (!stopped) timers.setTimeout(run, ms).unref();
  }

  async function pruneBatch(): Promise<number> {
    try {
      const removed = await prune(clock() - keepMs, batchSize);
      failing = false;
      return removed >= batchSize ? pauseMs : everyMs;
    } catch (error) {
      if (!failing) log(`pruning ${what} failed; trying again in ${everyMs / 1000} s`, faultDetail(error));
      failing = true;
      return everyMs;
    }
  }

  function run() {
    if (stopped || batch) return;
    batch = pruneBatch().then((waitMs) => {
      batch = undefined;
      schedule(waitMs);
    });
  }

  return {
    start() {
      if (!stopped || keepMs === 0) return;
      stopped = false;
      schedule(0);
    },
    /** Starts no more batches; resolves once the one under way, if any, has ended. */
    async stop() {
      stopped = true;
      await batch;
    },
  };
}

export type Pruner = ReturnType<typeof createPruner>;
