import { Elysia } from "elysia";
import { type ChangeFeed, createChangeFeed } from "./changes/feed";
import { changeRoutes } from "./changes/routes";
import type { Config } from "./config";
import { type FaultLog, faultDetail } from "./core/fault";
import { createStoreHealth, DAMAGED_LOG_MESSAGE } from "./core/health";
import { createRateLimiter } from "./core/rate-limit";
import type { Stores } from "./core/stores";
import type { Clock } from "./core/tokens";
import { apiDocs } from "./docs/openapi";
import { errorHandler, errorResponse, faultResponder } from "./http/errors";
import { allowedMethodsFor, type RouteLike } from "./http/routes-table";
import { wireDefaults } from "./http/wire";
import { createMetrics } from "./ops/metrics";
import type { RequestNotes } from "./ops/request-id";
import { type Lifecycle, opsRoutes } from "./ops/routes";
import { plantRoutes } from "./plants/routes";
import { tokenRoutes } from "./tokens/routes";
import { createFanOut, type FanOut } from "./webhooks/fan-out";
import { webhookRoutes } from "./webhooks/routes";
import type { Resolver } from "./webhooks/send";

export type AppConfig = Pick<
  Config,
  | "bodyLimitBytes"
  | "bodyTimeoutMs"
  | "rateLimitPerMinute"
  | "authFailuresPerMinute"
  | "trustProxy"
  | "corsOrigins"
  | "swaggerPersistAuthorization"
  | "webhookAllowPrivate"
  | "idempotencyTtlHours"
  | "changeStreamsPerToken"
  | "maxChangeStreams"
>;

export interface AppDeps {
  stores: Stores;
  config: AppConfig;
  clock?: Clock;
  log: FaultLog;
  ops?: AppOps;
  /** How webhook hosts are resolved at registration (tests); the system's resolver otherwise. */
  resolveWebhookHost?: Resolver;
  /** The live change streams; index.ts closes them at SIGTERM. One on these stores otherwise. */
  feed?: ChangeFeed;
  /** The webhook outbox's feed from the change log, shared with the dispatcher. One on these stores otherwise. */
  fanOut?: FanOut;
}

/** What the app shares with the layer that observes it (src/ops/observe.ts): request notes, metrics, a lifecycle. */
export function createOps(stores: Stores, notes: RequestNotes = new WeakMap()) {
  const lifecycle: Lifecycle = { state: "ready" };
  return { notes, metrics: createMetrics(stores.status.figures), lifecycle };
}
export type AppOps = ReturnType<typeof createOps>;

const FRAGMENT = "The request target must not contain '#'; percent-encode it as %23.";

/** The live change streams on these stores, as the config limits them. */
export const changeFeedOn = (stores: Stores, config: AppConfig, log: FaultLog) =>
  createChangeFeed({
    store: stores.changes,
    tokens: stores.tokens,
    log,
    perToken: config.changeStreamsPerToken,
    max: config.maxChangeStreams,
  });

/** Builds the whole service around its dependencies; it never listens (src/index.ts does). */
export function createApp({
  stores,
  config,
  clock = Date.now,
  log,
  ops = createOps(stores),
  resolveWebhookHost,
  feed = changeFeedOn(stores, config, log),
  fanOut = createFanOut(stores.webhooks, stores.changes),
}: AppDeps) {
  // Filled in once the routes exist: a 405 lists the methods routed for the path, the bearer check reads each route's scope.
  const routeTable: { routes: readonly RouteLike[] } = { routes: [] };
  const limits = {
    routeTable,
    perToken: stores.requestLimiter(config.rateLimitPerMinute, clock),
    failuresPerClient: createRateLimiter(config.authFailuresPerMinute, clock),
    trustedProxies: config.trustProxy,
    atOnce: stores.engine === "sqlite",
  };
  const body = { limitBytes: config.bodyLimitBytes, timeoutMs: config.bodyTimeoutMs };
  const health = createStoreHealth();
  const auth = { tokens: stores.tokens, limits, body, notes: ops.notes };
  /** For faults no error handler sees (a list failing mid-answer): damage still turns readiness off. */
  const storeFaultLog: FaultLog = (message, detail, request) =>
    log(health.noteFault(detail) ? DAMAGED_LOG_MESSAGE : message, faultDetail(detail), request);
  const answerFault = faultResponder({ log, health, clock });
  const app = new Elysia()
    .use(wireDefaults(config.corsOrigins))
    .use(errorHandler({ allowedMethods: (path) => allowedMethodsFor(routeTable.routes, path), answerFault }))
    // A fragment in the target is refused before routing: Elysia would route on it. No `return f(…)`: it stays sync.
    .onRequest(({ request }) => {
      const refusal = request.url.includes("#") && errorResponse(400, FRAGMENT);
      if (refusal) return refusal;
    })
    .use(apiDocs(config.swaggerPersistAuthorization))
    .use(opsRoutes({ lifecycle: ops.lifecycle, status: stores.status, health, log }))
    .use(changeRoutes({ ...auth, changes: stores.changes, feed }))
    .use(
      plantRoutes({
        ...auth,
        plants: stores.plants,
        metrics: ops.metrics,
        log: storeFaultLog,
        answerFault,
        idempotency: { ttlHours: config.idempotencyTtlHours, clock },
      }),
    )
    .use(
      webhookRoutes({
        ...auth,
        webhooks: stores.webhooks,
        log: storeFaultLog,
        allowPrivate: config.webhookAllowPrivate,
        resolve: resolveWebhookHost,
        fanOut,
      }),
    )
    .use(tokenRoutes({ ...auth, clock }));
  routeTable.routes = app.routes;
  return app;
}

export type App = ReturnType<typeof createApp>;
