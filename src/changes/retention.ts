import type { ChangeStore } from "../core/changes";
import { createPruner, type PrunerContext } from "../core/pruner";

/** Small batches, as the outbox's (docs/decisions/0006-outbox-upkeep.md): never a long hold of the write lock. */
export function createChangeRetention({
  store,
  hours,
  ...context
}: PrunerContext & { store: Pick<ChangeStore, "prune">; hours: number }) {
  return createPruner({
    what: "old changes",
    prune: (before, limit) => store.prune(before, limit),
    keepMs: hours * 3_600_000,
    batchSize: 100,
    pauseMs: 50,
    everyMs: 60_000,
    ...context,
  });
}
