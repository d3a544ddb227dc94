import { createPruner, type PrunerContext } from "../core/pruner";
import type { WebhookStore } from "../core/stores";

/** Why these batches and waits: docs/decisions/0006-outbox-upkeep.md. */
export const RETENTION_BATCH = 100;
export const RETENTION_PAUSE_MS = 50;
export const RETENTION_EVERY_MS = 60_000;

/** `days` 0 keeps every delivery. */
export function createDeliveryRetention({
  store,
  days,
  ...context
}: PrunerContext & { store: WebhookStore; days: number }) {
  return createPruner({
    what: "old webhook deliveries",
    prune: (before, limit) => store.pruneFinished(before, limit),
    keepMs: days * 86_400_000,
    batchSize: RETENTION_BATCH,
    pauseMs: RETENTION_PAUSE_MS,
    everyMs: RETENTION_EVERY_MS,
    ...context,
  });
}
