import type { Database } from "bun:sqlite";
import type { SynchronousMode } from "../../core/database";
import type { StoreFailureKind } from "../../core/failures";
import { type FaultLog, faultDetail } from "../../core/fault";
import { createRateLimiter } from "../../core/rate-limit";
import type { Stores } from "../../core/stores";
import type { Clock } from "../../core/tokens";
import { WRITE_SQL } from "./built-sql";
import { closeDatabase } from "./client";
import { storeFigures } from "./figures";
import { createSqlitePlantStore } from "./plants";
import { createSqliteTokenStore } from "./tokens";
import { createSqliteWebhookStore } from "./webhooks";
import { startWorkerWriter } from "./worker-writer";
import { inThreadWriter, type Writer } from "./writer";

export interface SqliteStoreOptions {
  /** Writes waiting for their commit past which new ones get 503 (MAX_IN_FLIGHT). */
  maxQueued: number;
  /** How long a write waits for another process's write lock before 503 (WRITE_LOCK_TIMEOUT_MS). */
  lockTimeoutMs: number;
  clock?: Clock;
  log: FaultLog;
}

/** The synchronous level the connection was opened with, for the writer's own connection. */
function synchronousOf(sqlite: Database): SynchronousMode {
  const level = sqlite.query<{ synchronous: number }, []>("PRAGMA synchronous").get()?.synchronous;
  return (["OFF", "NORMAL", "FULL", "EXTRA"] as const)[level ?? 2] ?? "FULL";
}

/**
 * The stores on one SQLite database: writes go through one group commit, on a writer thread of
 * its own for a file; reads answer synchronously on the caller's thread, and the request
 * limiter is this process's own (one process owns the file).
 */
export function createSqliteStores(
  sqlite: Database,
  { maxQueued, lockTimeoutMs, clock = Date.now, log }: SqliteStoreOptions,
): Stores {
  const ping = sqlite.prepare("SELECT 1");
  const onHealthChange = (problem: StoreFailureKind | undefined, error?: unknown) =>
    problem ? log(`writes are failing: ${problem}`, faultDetail(error)) : log("writes succeed again", undefined);
  // A file gets a writer thread; `:memory:` cannot: no second connection can open it.
  const inMemory = sqlite.filename === ":memory:" || sqlite.filename === "";
  const writes: Writer = !inMemory
    ? startWorkerWriter({
        path: sqlite.filename,
        synchronous: synchronousOf(sqlite),
        texts: WRITE_SQL,
        maxQueued,
        lockTimeoutMs,
        onHealthChange,
        onCrash: (error) =>
          log(
            "the writer thread failed; its writes got 503, and the next write after a pause starts a new one",
            faultDetail(error),
          ),
      })
    : inThreadWriter(sqlite, WRITE_SQL, { maxQueued, lockTimeoutMs, onHealthChange });
  return {
    engine: "sqlite",
    synchronousReads: true,
    plants: createSqlitePlantStore(sqlite, writes),
    tokens: createSqliteTokenStore(sqlite, clock, writes),
    webhooks: createSqliteWebhookStore(sqlite, writes, clock),
    status: { ping: () => ping.get(), problem: writes.problem, figures: storeFigures(sqlite) },
    requestLimiter: (perMinute, limiterClock) => createRateLimiter(perMinute, limiterClock),
    async close() {
      await writes.close();
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
