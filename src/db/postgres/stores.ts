import type { SQL } from "bun";
import { storeFailureKind } from "../../core/failures";
import { type FaultLog, faultDetail } from "../../core/fault";
import type { Stores } from "../../core/stores";
import type { Clock } from "../../core/tokens";
import { createPostgresChangeStore } from "./changes";
import { connect, migrate, type PostgresTarget } from "./client";
import { createDeadline, withDeadline } from "./deadline";
import { createPostgresPlantStore } from "./plants";
import { STATUS_SQL } from "./queries";
import { createPostgresRateLimiter } from "./rate-limit";
import { createSpaceWatch } from "./space";
import { createPostgresTokenStore } from "./tokens";
import { createPostgresWebhookStore } from "./webhooks";

export interface PostgresStoreOptions {
  clock?: Clock;
  log: FaultLog;
  /** deadline.ts; see guardOf. */
  deadlineMs?: number;
  poolSize?: number;
  maxInFlight?: number;
  limiterWaitMs?: number;
}

const FIRST_SIZE_READ_MS = 1_000;
/** The writes whose success, or failure for want of disk, tells whether there is room (space.ts). */
const PLANT_WRITES = ["createPlant", "createPlantOnce", "updatePlant", "deletePlant"] as const;
const WEBHOOK_WRITES = ["register", "remove", "fanOut"] as const;

/** Several instances may share the database; `database_size` is read at most every 10 s, beside the scrape. */
export function createPostgresStores(
  client: SQL,
  {
    clock = Date.now,
    log,
    deadlineMs = 15_000,
    poolSize = 10,
    maxInFlight = 1024,
    limiterWaitMs,
  }: PostgresStoreOptions,
): Stores {
  const deadline = createDeadline(deadlineMs, poolSize, maxInFlight);
  const space = createSpaceWatch(client, log);
  let databaseBytes = 0;
  let sizeReadAt = Number.NEGATIVE_INFINITY;
  const refreshSize = () => {
    if (Date.now() - sizeReadAt < 10_000) return;
    sizeReadAt = Date.now();
    client
      .unsafe(STATUS_SQL.databaseBytes)
      .then((rows) => {
        databaseBytes = Number((rows as Array<{ bytes: number }>)[0]?.bytes ?? 0);
      })
      .catch(() => {});
  };
  // Not at the start: it would take a second connection while the start's reads wait for the first.
  setTimeout(refreshSize, FIRST_SIZE_READ_MS).unref();
  const changes = createPostgresChangeStore(client, log, clock);
  const plants = createPostgresPlantStore(client, { clock, logged: changes.logged });
  const webhooks = createPostgresWebhookStore(client, clock, changes.settle);
  return {
    engine: "postgres",
    changes: withDeadline(changes, deadline),
    plants: space.watch(withDeadline(plants, deadline), PLANT_WRITES),
    tokens: withDeadline(createPostgresTokenStore(client, clock), deadline),
    webhooks: space.watch(withDeadline(webhooks, deadline), WEBHOOK_WRITES),
    status: {
      ping: () => client.unsafe(STATUS_SQL.ping),
      // Other failures are one request's; lasting ones are a pool held by overdue calls, and no room.
      problem: () => (deadline.overdue() >= poolSize ? "timeout" : space.full() ? "full" : undefined),
      // PostgreSQL reads its own pages, and checks them where data checksums are on.
      checkInBackground() {},
      figures: {
        databaseBytes() {
          refreshSize();
          return databaseBytes;
        },
      },
    },
    // Not held to the deadline: the limiter bounds its own wait.
    requestLimiter: (perMinute, limiterClock) =>
      createPostgresRateLimiter(client, perMinute, limiterClock, { log, waitMs: limiterWaitMs }),
    async close() {
      try {
        await client.close({ timeout: 5 });
      } catch (error) {
        if (storeFailureKind(error) !== "unreachable") log("closing the database pool failed", faultDetail(error));
      }
    },
  };
}

/** A call may take as long as a healthy server could: a new connection, then the longest statement. */
export function guardOf(target: PostgresTarget): Pick<PostgresStoreOptions, "deadlineMs" | "poolSize"> {
  return { deadlineMs: target.connectTimeoutMs + target.statementTimeoutMs, poolSize: target.poolSize };
}

export async function openPostgresStores(target: PostgresTarget, options: PostgresStoreOptions): Promise<Stores> {
  const { client } = connect(target);
  try {
    await migrate(client);
  } catch (error) {
    await client.close({ timeout: 1 }).catch(() => {});
    throw error;
  }
  return createPostgresStores(client, { ...guardOf(target), ...options });
}
