import { storeFailureKind } from "./failures";

export const DAMAGED_REQUEST_MESSAGE =
  "The store's database is damaged; this request cannot be served until it is restored.";
export const DAMAGED_READINESS_MESSAGE = "The database is damaged.";
export const DAMAGED_LOG_MESSAGE =
  "the database is damaged: readiness stays 503 until a restart; bun run cli check lists the damage, a backup restores it";
export const DAMAGED_CHECK_LOG_MESSAGE = `the integrity check after start-up found damage; ${DAMAGED_LOG_MESSAGE}`;

export function isDatabaseDamage(error: unknown): boolean {
  return storeFailureKind(error) === "corrupt";
}

/**
 * Start-up does not read every page, so damage shows when a query or the background check
 * (src/db/sqlite/integrity.ts) reads it; from then on, until a restart, the service is not ready.
 */
export function createStoreHealth() {
  let damaged = false;
  return {
    get damaged() {
      return damaged;
    },
    /** Records `error` when it is damage, and says whether it was. */
    noteFault(error: unknown): boolean {
      if (!isDatabaseDamage(error)) return false;
      damaged = true;
      return true;
    },
  };
}

export type StoreHealth = ReturnType<typeof createStoreHealth>;
