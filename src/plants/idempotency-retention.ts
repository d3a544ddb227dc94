import { createPruner, type PrunerContext } from "../core/pruner";
import type { PlantStore } from "../core/stores";

type Options = PrunerContext & { store: Pick<PlantStore, "pruneIdempotencyKeys">; hours: number };

/** An expired record is never replayed anyway: the pruner only keeps the table small. */
export function createIdempotencyRetention({ store, hours, ...context }: Options) {
  return createPruner({
    what: "expired idempotency keys",
    prune: (before, limit) => store.pruneIdempotencyKeys(before, limit),
    keepMs: hours * 3_600_000,
    batchSize: 100,
    pauseMs: 50,
    everyMs: 60_000,
    ...context,
  });
}
