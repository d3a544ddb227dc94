import { Elysia } from "elysia";
import { type Clock, createTokenStore } from "./auth/tokens";
import type { Config } from "./config";
import type { AppDatabase } from "./db/client";
import { createGroupCommit } from "./db/group-commit";
import { apiDocs } from "./docs/openapi";
import { errorHandler, errorResponse } from "./http/errors";
import { declaredBodyTooLarge, tooLarge } from "./http/json-body";
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
  "bodyLimitBytes" | "rateLimitPerMinute" | "corsOrigins" | "metricsEnabled" | "metricsToken"
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
 * What is refused before routing: a fragment in the target (Elysia would route on it), and a
 * declared body over the limit (answered before any of it is read).
 */
function refuseEarly(request: Request, bodyLimitBytes: number): Response | undefined {
  if (request.url.includes("#")) {
    return errorResponse(400, "The request target must not contain '#'; percent-encode it as %23.");
  }
  if (declaredBodyTooLarge(request, bodyLimitBytes)) {
    const { status, message } = tooLarge(bodyLimitBytes);
    return errorResponse(status, message);
  }
  return undefined;
}

// Elysia reads hook and handler source to decide what to compile as async: "return f(" or
// "=> f(" makes it assume a promise, which every request then pays for. Hooks on the hot
// path keep their calls out of return position.

const logToStderr: FaultLog = (message, detail) => console.error(message, detail);

/** Builds the whole service around its dependencies; it never listens (src/index.ts does). */
export function createApp({ db, config, clock = Date.now, log = logToStderr, ops = createOps(db) }: AppDeps) {
  const { bodyLimitBytes } = config;
  const ping = db.$client.prepare("SELECT 1");
  const tokens = createTokenStore(db, clock);
  const plants = createPlantQueries(db, createGroupCommit(db.$client));
  const limiter = createRateLimiter(config.rateLimitPerMinute, clock);
  // Filled in once the routes exist: a 405 lists the methods routed for the path.
  const routeTable: { routes: readonly RouteLike[] } = { routes: [] };
  const app = new Elysia()
    .use(wireDefaults(config.corsOrigins))
    .use(errorHandler({ allowedMethods: (path) => allowedMethodsFor(routeTable.routes, path), log }))
    .onRequest(({ request }) => {
      const refusal = refuseEarly(request, bodyLimitBytes);
      if (refusal) return refusal;
    })
    .use(apiDocs())
    .use(
      opsRoutes({
        lifecycle: ops.lifecycle,
        pingDatabase: () => ping.get(),
        metrics: ops.metrics,
        metricsEnabled: config.metricsEnabled,
        metricsToken: config.metricsToken,
        log,
      }),
    )
    .use(plantRoutes({ plants, tokens, limiter, bodyLimitBytes, notes: ops.notes, log }));
  routeTable.routes = app.routes;
  return app;
}

export type App = ReturnType<typeof createApp>;
