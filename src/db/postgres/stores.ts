import type { SQL } from "bun";
import type { FaultLog } from "../../app";
import type { Clock } from "../../auth/tokens";
import { faultDetail } from "../../http/errors";
import { storeFailureKind } from "../store-errors";
import type { Stores } from "../stores";
import { connect, migrate, type PostgresDatabase, type PostgresTarget } from "./client";
import { createPostgresPlantStore } from "./plants";
import { createPostgresRateLimiter } from "./rate-limit";
import { createPostgresTokenStore } from "./tokens";

export interface PostgresStoreOptions {
  clock?: Clock;
  log: FaultLog;
}

/**
 * The stores on a PostgreSQL pool. Several instances may share the database: everything they
 * must agree on (tokens, plants, the per-token budget) lives in it. `database_size` for the
 * metrics is read at most every 10 s, beside the scrape, never on it.
 */
export function createPostgresStores(
  client: SQL,
  db: PostgresDatabase,
  { clock = Date.now, log }: PostgresStoreOptions,
): Stores {
  let databaseBytes = 0;
  let sizeReadAt = Number.NEGATIVE_INFINITY;
  const refreshSize = () => {
    if (Date.now() - sizeReadAt < 10_000) return;
    sizeReadAt = Date.now();
    client`SELECT pg_database_size(current_database())::float8 AS bytes`
      .then((rows) => {
        databaseBytes = Number((rows as Array<{ bytes: number }>)[0]?.bytes ?? 0);
      })
      .catch(() => {});
  };
  refreshSize();
  return {
    engine: "postgres",
    synchronousReads: false,
    plants: createPostgresPlantStore(db),
    tokens: createPostgresTokenStore(db, clock),
    status: {
      ping: () => client`SELECT 1`,
      // Writes fail one by one here (each request gets its own 503); readiness asks the ping.
      problem: () => undefined,
      figures: {
        databaseBytes() {
          refreshSize();
          return databaseBytes;
        },
      },
    },
    requestLimiter: (perMinute, limiterClock) => createPostgresRateLimiter(client, perMinute, limiterClock),
    async close() {
      try {
        await client.close({ timeout: 5 });
      } catch (error) {
        if (storeFailureKind(error) !== "unreachable") log("closing the database pool failed", faultDetail(error));
      }
    },
  };
}

/** Connects, migrates under the advisory lock, and builds the stores. */
export async function openPostgresStores(target: PostgresTarget, options: PostgresStoreOptions): Promise<Stores> {
  const { client, db } = connect(target);
  try {
    await migrate(client);
  } catch (error) {
    await client.close({ timeout: 1 }).catch(() => {});
    throw error;
  }
  return createPostgresStores(client, db, options);
}
