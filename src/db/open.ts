import type { FaultLog } from "../app";
import type { Config } from "../config";
import { openDatabase } from "./sqlite/client";
import { createSqliteStores } from "./sqlite/stores";
import type { Stores } from "./stores";

export { StartupRefusal } from "./start-up-refusal";

export interface OpenedStores {
  stores: Stores;
}

/**
 * The one place the engine is picked, from DATABASE_URL's scheme: opens the database, brings its
 * schema up to date and builds the stores on it.
 */
export async function openStores(config: Config, log: FaultLog): Promise<OpenedStores> {
  const { database } = config;
  if (database.engine === "postgres") {
    const { openPostgresStores } = await import("./postgres/stores");
    return { stores: await openPostgresStores(database, { log, maxInFlight: config.maxInFlight }) };
  }
  const { sqlite } = openDatabase({ path: database.path, synchronous: config.synchronous });
  return {
    stores: createSqliteStores(sqlite, {
      maxQueued: config.maxInFlight,
      lockTimeoutMs: config.writeLockTimeoutMs,
      log,
    }),
  };
}
