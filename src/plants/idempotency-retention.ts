import type { FaultLog } from "../core/fault";
import { createPruner } from "../core/pruner";
import type { PlantStore } from "../core/stores";
import type { Timers } from "../core/timers";

const HOUR_MS = 3_600_000;

export interface IdempotencyRetentionOptions {
  store: Pick<PlantStore, "pruneIdempotencyKeys">;
  /** IDEMPOTENCY_TTL_HOURS. */
  hours: number;
  log: FaultLog;
  clock?: () => number;
  timers?: Timers;
}

/**
 * Removes the kept answers of creates once IDEMPOTENCY_TTL_HOURS old, as webhook retention
 * removes old deliveries (src/webhooks/retention.ts): batches of 100, 50 ms apart while a
 * backlog lasts, then a look every minute. A record past its time and not yet removed is no
 * longer replayed (src/plants/idempotency.ts), so the pruner only keeps the table small.
 */
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
