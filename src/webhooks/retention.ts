import type { FaultLog } from "../core/fault";
import { createPruner } from "../core/pruner";
import type { WebhookStore } from "../core/stores";
import type { Timers } from "../core/timers";

const DAY_MS = 86_400_000;

/**
 * Deliveries one batch removes, with their attempts, and the waits: a batch of 100 is a few ms of
 * SQLite's writer, and a full one is followed by the next after 50 ms, so a backlog goes at up
 * to ~1,800 deliveries/s (docs/decisions/0006-outbox-upkeep.md).
 */
export const RETENTION_BATCH = 100;
export const RETENTION_PAUSE_MS = 50;
/** How often the outbox is looked at once nothing is old enough. */
export const RETENTION_EVERY_MS = 60_000;

export interface DeliveryRetentionOptions {
  store: WebhookStore;
  /** WEBHOOK_RETENTION_DAYS; 0 keeps every delivery. */
  days: number;
  log: FaultLog;
  clock?: () => number;
  timers?: Timers;
}

/**
 * Removes delivered and failed deliveries, with their attempts, once they are `days` old
 * (counted from their creation, the plant's); a pending delivery stays however old.
 */
export function createDeliveryRetention({ store, days, log, clock, timers }: DeliveryRetentionOptions) {
  return createPruner({
    what: "old webhook deliveries",
    prune: (before, limit) => store.pruneFinished(before, limit),
    keepMs: days * DAY_MS,
    batchSize: RETENTION_BATCH,
    pauseMs: RETENTION_PAUSE_MS,
    everyMs: RETENTION_EVERY_MS,
    log,
    clock,
    timers,
  });
}
