import { type FaultLog, faultDetail } from "./fault";
import { systemTimers, type Timers } from "./timers";

/** Why these batches and waits: docs/decisions/0006-outbox-upkeep.md. */
export const PRUNE_BATCH = 100;
export const PRUNE_PAUSE_MS = 50;
export const PRUNE_EVERY_MS = 60_000;

export interface PrunerOptions {
  /** What is pruned, as the log names it. */
  what: string;
  /** Removes up to `limit` of the oldest records made before `before` (ms); how many went. */
  prune(before: number, limit: number): Promise<number>;
  /** 0 keeps every record (the pruner never starts). */
  keepMs: number;
  batchSize?: number;
  /** The wait after a full batch, so the database's other work goes between batches. */
  pauseMs?: number;
  /** The wait after a short or failed batch. */
  everyMs?: number;
  log: FaultLog;
  clock?: () => number;
  timers?: Timers;
}

/**
 * Removes records past their age in small batches off the request path (one short statement each,
 * so the database never holds a long one); a failure is logged once per streak.
 */
export function createPruner({
  what,
  prune,
  keepMs,
  batchSize = PRUNE_BATCH,
  pauseMs = PRUNE_PAUSE_MS,
  everyMs = PRUNE_EVERY_MS,
  log,
  clock = Date.now,
  timers = systemTimers,
}: PrunerOptions) {
  let stopped = true;
  let failing = false;
  let batch: Promise<void> | undefined;

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
      if (!stopped) timers.setTimeout(run, waitMs).unref();
    });
  }

  return {
    start() {
      if (!stopped || keepMs === 0) return;
      stopped = false;
      timers.setTimeout(run, 0).unref();
    },
    /** Starts no more batches; resolves once the one under way, if any, has ended. */
    async stop() {
      stopped = true;
      await batch;
    },
  };
}
