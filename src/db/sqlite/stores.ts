import type { FaultLog } from "../../app";
import type { Clock } from "../../auth/tokens";
import { faultDetail } from "../../http/errors";
import { createRateLimiter } from "../../http/rate-limit";
import type { Stores } from "../stores";
import { type AppDatabase, closeDatabase } from "./client";
import { storeFigures } from "./figures";
import { createGroupCommit } from "./group-commit";
import { createSqlitePlantStore } from "./plants";
import { createSqliteTokenStore } from "./tokens";
import { createSqliteWebhookStore } from "./webhooks";

export interface SqliteStoreOptions {
  /** Writes waiting for their commit past which new ones get 503 (MAX_IN_FLIGHT). */
  maxQueued: number;
  /** How long a write waits for another process's write lock before 503 (WRITE_LOCK_TIMEOUT_MS). */
  lockTimeoutMs: number;
  clock?: Clock;
  log: FaultLog;
}

/**
 * The stores on one SQLite database: writes go through one group commit, reads answer
 * synchronously, and the request limiter is this process's own (one process owns the file).
 */
export function createSqliteStores(
  db: AppDatabase,
  { maxQueued, lockTimeoutMs, clock = Date.now, log }: SqliteStoreOptions,
): Stores {
  const sqlite = db.$client;
  const ping = sqlite.prepare("SELECT 1");
  const writes = createGroupCommit(sqlite, {
    maxQueued,
    lockTimeoutMs,
    onHealthChange: (problem, error) =>
      problem ? log(`writes are failing: ${problem}`, faultDetail(error)) : log("writes succeed again", undefined),
  });
  return {
    engine: "sqlite",
    synchronousReads: true,
    plants: createSqlitePlantStore(db, writes),
    tokens: createSqliteTokenStore(db, clock, writes),
    webhooks: createSqliteWebhookStore(db, writes, clock),
    status: { ping: () => ping.get(), problem: writes.problem, figures: storeFigures(db) },
    requestLimiter: (perMinute, limiterClock) => createRateLimiter(perMinute, limiterClock),
    async close() {
      try {
        closeDatabase(sqlite);
      } catch (error) {
        // A full disk fails the checkpoint; the WAL still holds every committed write and the
        // next start (or any reader) uses it, so this is worth a line, not a failed exit.
        log("the final WAL checkpoint failed; the WAL keeps every committed write", faultDetail(error));
        sqlite.close();
      }
    },
  };
}
