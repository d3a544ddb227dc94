import { Elysia } from "elysia";
import { type Clock, createTokenStore } from "./auth/tokens";
import type { Config } from "./config";
import type { AppDatabase } from "./db/client";
import { createGroupCommit } from "./db/group-commit";
import { createStoreHealth, DAMAGED_LOG_MESSAGE } from "./db/health";
import { apiDocs } from "./docs/openapi";
import { errorHandler, errorResponse, faultDetail } from "./http/errors";
import { createRateLimiter } from "./http/rate-limit";
import { allowedMethodsFor, type RouteLike } from "./http/routes-table";
import { wireDefaults } from "./http/wire";
import { createMetrics, type Metrics } from "./ops/metrics";
import type { RequestNotes } from "./ops/request-id";
import { type Lifecycle, opsRoutes } from "./ops/routes";
import { storeFigures } from "./ops/store-figures";
import { createPlantQueries } from "./plants/queries";
import { plantRoutes } from "./plants/routes";

export type AppConfig = Pick<
  Config,
  | "bodyLimitBytes"
  | "bodyTimeoutMs"
  | "rateLimitPerMinute"
  | "authFailuresPerMinute"
  | "maxInFlight"
  | "writeLockTimeoutMs"
  | "corsOrigins"
  | "swaggerPersistAuthorization"
>;

/** Where faults go; `request`, when given, ties the line to that request's id. */
export type FaultLog = (message: string, detail: unknown, request?: Request) => void;

/** What the app shares with the layer that observes it (src/ops/observe.ts). */
export interface AppOps {
  notes: RequestNotes;
  metrics: Metrics;
  lifecycle: Lifecycle;
}

export interface AppDeps {
  db: AppDatabase;
  config: AppConfig;
  clock?: Clock;
  log?: FaultLog;
  ops?: AppOps;
}

/** Request notes, metrics on this database, and a lifecycle that starts out ready. */
export function createOps(db: AppDatabase): AppOps {
  return { notes: new WeakMap(), metrics: createMetrics(storeFigures(db)), lifecycle: { state: "ready" } };
}

/**
 * What is refused before routing: a fragment in the target (Elysia would route on it). A
 * declared body over the limit is refused by the route, once the caller is authenticated.
 */
function refuseEarly(request: Request): Response | undefined {
  if (request.url.includes("#")) {
    return errorResponse(400, "The request target must not contain '#'; percent-encode it as %23.");
  }
  return undefined;
}

// Elysia reads hook and handler source to decide what to compile as async: "return f(" or
// "=> f(" makes it assume a promise, which every request then pays for. Hooks on the hot
// path keep their calls out of return position.

const logToStderr: FaultLog = (message, detail) => console.error(message, detail);

/** Builds the whole service around its dependencies; it never listens (src/index.ts does). */
export function createApp({ db, config, clock = Date.now, log = logToStderr, ops = createOps(db) }: AppDeps) {
  const ping = db.$client.prepare("SELECT 1");
  const writes = createGroupCommit(db.$client, {
    maxQueued: config.maxInFlight,
    lockTimeoutMs: config.writeLockTimeoutMs,
    onHealthChange: (problem, error) =>
      problem ? log(`writes are failing: ${problem}`, faultDetail(error)) : log("writes succeed again", undefined),
  });
  const tokens = createTokenStore(db, clock, writes);
  const plants = createPlantQueries(db, writes);
  const limits = {
    perToken: createRateLimiter(config.rateLimitPerMinute, clock),
    failuresPerClient: createRateLimiter(config.authFailuresPerMinute, clock),
  };
  const body = { limitBytes: config.bodyLimitBytes, timeoutMs: config.bodyTimeoutMs };
  const health = createStoreHealth();
  /** For faults no error handler sees (a list failing mid-answer): damage still turns readiness off. */
  const storeFaultLog: FaultLog = (message, detail, request) =>
    health.noteFault(detail)
      ? log(DAMAGED_LOG_MESSAGE, faultDetail(detail), request)
      : log(message, faultDetail(detail), request);
  // Filled in once the routes exist: a 405 lists the methods routed for the path.
  const routeTable: { routes: readonly RouteLike[] } = { routes: [] };
  const app = new Elysia()
    .use(wireDefaults(config.corsOrigins))
    .use(errorHandler({ allowedMethods: (path) => allowedMethodsFor(routeTable.routes, path), log, health }))
    .onRequest(({ request }) => {
      const refusal = refuseEarly(request);
      if (refusal) return refusal;
    })
    .use(apiDocs({ persistAuthorization: config.swaggerPersistAuthorization }))
    .use(
      opsRoutes({
        lifecycle: ops.lifecycle,
        pingDatabase: () => ping.get(),
        storeProblem: writes.problem,
        health,
        log,
      }),
    )
    .use(plantRoutes({ plants, tokens, limits, body, notes: ops.notes, metrics: ops.metrics, log: storeFaultLog }));
  routeTable.routes = app.routes;
  return app;
}

export type App = ReturnType<typeof createApp>;
