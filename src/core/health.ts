import { storeFailureKind } from "./failures";

/** What a request that reads the damage gets, with status 503. */
export const DAMAGED_REQUEST_MESSAGE =
  "The store's database is damaged; this request cannot be served until it is restored.";
/** What /readyz says, with status 503, once damage has been seen. */
export const DAMAGED_READINESS_MESSAGE = "The database is damaged.";
/** The fault line for the operator. */
export const DAMAGED_LOG_MESSAGE =
  "the database is damaged: readiness stays 503 until a restart; bun run cli check lists the damage, a backup restores it";
/** The same, when the integrity pass after start-up found it rather than a request. */
export const DAMAGED_CHECK_LOG_MESSAGE = `the integrity check after start-up found damage; ${DAMAGED_LOG_MESSAGE}`;

/** True when `error`, or what it wraps, is SQLite saying the database file is damaged. */
export function isDatabaseDamage(error: unknown): boolean {
  return storeFailureKind(error) === "corrupt";
}

/**
 * Start-up does not read every page (a full check would cost 95 ms to 0.86 s at 1,000,000
 * plants: `bun scripts/check-cost.ts [--cold]`), so damage deeper in the file shows up when
 * a query reads it, or when the quick check run off the main thread after start-up does
 * (src/db/sqlite/integrity.ts).
 * From then on the service says it is not ready: a load balancer stops sending it traffic.
 */
export interface StoreHealth {
  /** Whether damage has been seen; only a restart clears it. */
  readonly damaged: boolean;
  /** Records `error` when it is damage, and says whether it was. */
  noteFault(error: unknown): boolean;
}

export function createStoreHealth(): StoreHealth {
  let damaged = false;
  return {
    get damaged() {
      return damaged;
    },
    noteFault(error) {
      if (!isDatabaseDamage(error)) return false;
      damaged = true;
      return true;
    },
  };
}
