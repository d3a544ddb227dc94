import type { FaultLog } from "../core/fault";
import { createPruner } from "../core/pruner";
import type { PlantStore } from "../core/stores";
import type { Timers } from "../core/timers";

const HOUR_MS = 3_600_000;

export interface IdempotencyRetentionOptions {
  store: Pick<PlantStore, "pruneIdempotencyKeys">;
  hours: number;
  log: FaultLog;
  clock?: () => number;
  timers?: Timers;
}

/** An expired record is never replayed anyway: the pruner only keeps the table small. */
export function createIdempotencyRetention({ store, hours, log, clock, timers }: IdempotencyRetentionOptions) {
  return createPruner({
    what: "expired idempotency keys",
    prune: (before, limit) => store.pruneIdempotencyKeys(before, limit),
    keepMs: hours * HOUR_MS,
    batchSize: 100,
    pauseMs: 50,
    everyMs: 60_000,
    log,
    clock,
    timers,
  });
}
