import type { StoreConfig } from "../core/database";
import type { FaultLog } from "../core/fault";
import type { Stores } from "../core/stores";
import { openDatabase } from "./sqlite/client";
import { createSqliteStores } from "./sqlite/stores";

/** The one place the engine is picked; opens and migrates the database and builds the stores. */
export async function openStores(config: StoreConfig, log: FaultLog): Promise<Stores> {
  const { database } = config;
  if (database.engine === "postgres") {
    const { openPostgresStores } = await import("./postgres/stores");
    return openPostgresStores(database, { log, maxInFlight: config.maxInFlight });
  }
  const { sqlite } = openDatabase({ path: database.path, synchronous: config.synchronous });
  return createSqliteStores(sqlite, { maxQueued: config.maxInFlight, lockTimeoutMs: config.writeLockTimeoutMs, log });
}
