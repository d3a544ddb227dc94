import type { FaultLog } from "../core/fault";
import { createPruner } from "../core/pruner";
import type { WebhookStore } from "../core/stores";
import type { Timers } from "../core/timers";

const DAY_MS = 86_400_000;

/** Why these batches and waits: docs/decisions/0006-outbox-upkeep.md. */
export const RETENTION_BATCH = 100;
export const RETENTION_PAUSE_MS = 50;
export const RETENTION_EVERY_MS = 60_000;

export interface DeliveryRetentionOptions {
  store: WebhookStore;
  /** 0 keeps every delivery. */
  days: number;
  log: FaultLog;
  clock?: () => number;
  timers?: Timers;
}

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
