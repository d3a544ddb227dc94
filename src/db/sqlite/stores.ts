import type { Database } from "bun:sqlite";
import type { StoreFailureKind } from "../../core/failures";
import { type FaultLog, faultDetail } from "../../core/fault";
import { DAMAGED_CHECK_LOG_MESSAGE } from "../../core/health";
import { createRateLimiter } from "../../core/rate-limit";
import type { Stores } from "../../core/stores";
import type { Clock } from "../../core/tokens";
import { createSqliteChangeStore } from "./changes";
import { closeDatabase } from "./client";
import { checkIntegrity } from "./integrity";
import { createSqlitePlantStore } from "./plants";
import { STATUS_SQL } from "./queries";
import { createSqliteTokenStore } from "./tokens";
import { createSqliteWebhookStore } from "./webhooks";
import { createWriter } from "./writer";

export interface SqliteStoreOptions {
  maxQueued: number;
  lockTimeoutMs: number;
  clock?: Clock;
  log: FaultLog;
}

/** The request limiter is this process's own: one process owns the file. */
export function createSqliteStores(
  sqlite: Database,
  { maxQueued, lockTimeoutMs, clock = Date.now, log }: SqliteStoreOptions,
): Stores {
  const ping = sqlite.prepare(STATUS_SQL.ping);
  const size = sqlite.prepare<{ bytes: number }, []>(STATUS_SQL.databaseBytes);
  const onHealthChange = (problem: StoreFailureKind | undefined, error?: unknown) =>
    problem ? log(`writes are failing: ${problem}`, faultDetail(error)) : log("writes succeed again", undefined);
  // No second connection can open `:memory:`: no integrity pass.
  const inMemory = sqlite.filename === ":memory:" || sqlite.filename === "";
  let integrity: ReturnType<typeof checkIntegrity> | undefined;
  let damaged = false;
  const writes = createWriter(sqlite, { maxQueued, lockTimeoutMs, onHealthChange });
  const changes = createSqliteChangeStore(sqlite, writes);
  return {
    engine: "sqlite",
    plants: createSqlitePlantStore(sqlite, writes, { clock, logged: changes.logged }),
    changes,
    tokens: createSqliteTokenStore(sqlite, writes, clock),
    webhooks: createSqliteWebhookStore(sqlite, writes, clock),
    status: {
      ping: async () => ping.get(),
      problem: () => (damaged ? "corrupt" : writes.problem()),
      checkInBackground() {
        if (inMemory || integrity) return;
        integrity = checkIntegrity(sqlite.filename);
        integrity.report.then((report) => {
          if (report.damaged) {
            damaged = true;
            log(DAMAGED_CHECK_LOG_MESSAGE, { findings: report.findings });
          } else if (report.failed) log("the integrity check after start-up could not run", report.failed);
        });
      },
      figures: { databaseBytes: () => size.get()?.bytes ?? 0 },
    },
    requestLimiter(perMinute, limiterClock) {
      const limiter = createRateLimiter(perMinute, limiterClock);
      return { take: (key) => limiter.take(key) };
    },
    async close() {
      integrity?.stop();
      await writes.close();
      try {
        closeDatabase(sqlite);
      } catch (error) {
        // A full disk fails the checkpoint; the WAL still holds every committed write: a line, not a failed exit.
        log("the final WAL checkpoint failed; the WAL keeps every committed write", faultDetail(error));
        sqlite.close(true);
      }
    },
  };
}
