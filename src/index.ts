import { changeFeedOn, createApp, createOps } from "./app";
import { type Config, ConfigError, ensureDatabaseFolder, loadConfig } from "./config";
import { StartupRefusal } from "./core/failures";
import { faultSummary } from "./core/fault";
import { createPruner } from "./core/pruner";
import { retryWhileUnreachable } from "./core/startup";
import { openStores } from "./db/open";
import { createLogger, faultLog, lifecycleLogger } from "./ops/logger";
import { createMetricsApp } from "./ops/metrics-app";
import { LOW_OPEN_FILES, openFilesLimit } from "./ops/open-files";
import type { RequestNotes } from "./ops/request-id";
import { serve } from "./server";
import { createDispatcher } from "./webhooks/dispatcher";
import { createFanOut } from "./webhooks/fan-out";

/** Start-up failures are one plain line on stderr: the logger may not exist yet. */
function fail(message: string): never {
  console.error(`plant-store: ${message}`);
  process.exit(1);
}

async function main() {
  let config: Config;
  try {
    config = loadConfig();
    ensureDatabaseFolder(config);
  } catch (error) {
    if (error instanceof ConfigError) fail(error.message);
    throw error;
  }

  const { logger, access, flush } = await createLogger({ level: config.logLevel, format: config.logFormat });
  const notes: RequestNotes = new WeakMap();
  const log = faultLog(logger, notes);
  const { stores, issued } = await retryWhileUnreachable(
    async () => {
      const opened = await openStores(config, log);
      try {
        // The first read of the tokens table: damage there is a start-up failure like any other.
        return { stores: opened, issued: await opened.tokens.bootstrap() };
      } catch (error) {
        await opened.close();
        throw error;
      }
    },
    {
      timeoutMs: config.startupTimeoutMs,
      note: (line) => console.error(`plant-store: cannot reach the database at ${config.databaseName} yet: ${line}`),
    },
  ).catch((error) => {
    if (error instanceof StartupRefusal) fail(error.message);
    return fail(`cannot open the database at ${config.databaseName}: ${faultSummary(error)}`);
  });

  const ops = createOps(stores, notes);
  ops.lifecycle.state = "starting";
  const lifecycle = lifecycleLogger(logger);
  if (config.webhookAllowPrivate) {
    lifecycle.warn(
      { webhookAllowPrivate: true },
      "WEBHOOK_ALLOW_PRIVATE is on: webhooks may be sent to loopback, private and link-local addresses (this host, its network, cloud metadata); keep it off unless every user is trusted",
    );
  }

  const fanOut = createFanOut(stores.webhooks, stores.changes);
  const dispatcher = createDispatcher({
    store: stores.webhooks,
    fanOut,
    retryDelaysMs: config.webhookRetryDelaysMs,
    allowPrivate: config.webhookAllowPrivate,
    log,
    metrics: ops.metrics,
  });
  const pruners = (
    [
      ["old webhook deliveries", stores.webhooks.pruneFinished, 24 * config.webhookRetentionDays],
      // An expired key is never replayed anyway: this only keeps the table small.
      ["expired idempotency keys", stores.plants.pruneIdempotencyKeys, config.idempotencyTtlHours],
      ["old changes", stores.changes.prune, config.changesRetentionHours],
    ] as const
  ).map(([what, prune, hours]) => createPruner({ what, prune, keepMs: hours * 3_600_000, log }));
  const feed = changeFeedOn(stores, config, log);
  const app = createApp({ stores, config, log, ops, feed, fanOut });
  let running: ReturnType<typeof serve>;
  try {
    running = serve(app, { ...config, log, access, ops });
  } catch (error) {
    await stores.close();
    fail(`cannot listen on ${config.host}:${config.port}: ${faultSummary(error)}`);
  }
  let metricsServer: Bun.Server<undefined> | undefined;
  if (config.metricsPort !== undefined) {
    const metricsApp = createMetricsApp({ metrics: ops.metrics, token: config.metricsToken, log });
    try {
      metricsServer = Bun.serve({ hostname: config.metricsHost, port: config.metricsPort, fetch: metricsApp });
    } catch (error) {
      await stores.close();
      fail(`cannot listen for metrics on ${config.metricsHost}:${config.metricsPort}: ${faultSummary(error)}`);
    }
  }

  let stopping = false;
  let stopWaking = async () => {};
  async function shutdown(signal: string) {
    // Ctrl-C under `bun run start` arrives twice (terminal and `bun run`): not an "exit now".
    if (stopping) return;
    stopping = true;
    ops.lifecycle.state = "draining";
    lifecycle.info({ signal }, `${signal} received: finishing requests in flight, then closing`);
    // Streams never finish by themselves: they end now, so their clients reconnect to another instance.
    await feed.close();
    // One deadline for the drain and the webhook attempts in flight, so a hanging receiver
    // cannot double it; an attempt cut off is made again after its lease.
    const deadline = performance.now() + config.shutdownTimeoutMs;
    const cutOff = await running.drain(config.shutdownTimeoutMs);
    if (cutOff > 0) logger.error({ cutOff }, `${cutOff} request(s) still in flight at the shutdown deadline`);
    await stopWaking();
    await dispatcher.stop(Math.max(0, deadline - performance.now()));
    for (const pruner of pruners) await pruner.stop();
    await metricsServer?.stop(true);
    const attemptsLeft = dispatcher.inFlight();
    if (attemptsLeft > 0) {
      lifecycle.info(
        { attemptsLeft },
        `${attemptsLeft} webhook attempt(s) still in flight at the shutdown deadline: they are made again once their lease ends`,
      );
    }
    await stores.close();
    lifecycle.info("Stopped cleanly.");
    await flush();
    process.exit(0);
  }
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  // Plain text, not a log record: log shippers that parse JSON lines pass the token by.
  if (issued) {
    console.log(`First start: created user "${issued.user}" with this token (shown once, store it now):`);
    console.log(issued.token);
    console.log(`Use it as: curl -H "Authorization: Bearer <token>" http://localhost:${running.server.port}/plants`);
  }
  const openFiles = openFilesLimit();
  if (openFiles !== undefined && openFiles < LOW_OPEN_FILES) {
    lifecycle.warn(
      { openFiles },
      `the open-file limit is ${openFiles}: once connections use it up, no new one is accepted and the server spins until some close; raise the hard limit (systemd LimitNOFILE=, docker --ulimit nofile=)`,
    );
  }
  ops.lifecycle.state = "ready";
  // Deliveries the last run left pending go out now; a committed change, here or on another instance, wakes it.
  dispatcher.start();
  stopWaking = await stores.changes.watch(dispatcher.wake);
  for (const pruner of pruners) pruner.start();
  stores.status.checkInBackground();
  // Announced only once the handlers are in place: a signal sent on seeing this line is handled.
  const url = `http://${config.host}:${running.server.port}`;
  const metricsUrl = metricsServer && `http://${config.metricsHost}:${metricsServer.port}/metrics`;
  const metricsNote = metricsUrl ? `; metrics at ${metricsUrl}` : "";
  // Which database it uses, never its password (databaseName has none).
  const { engine } = config.database;
  const database = `${engine === "sqlite" ? "SQLite" : "PostgreSQL"} at ${config.databaseName}`;
  lifecycle.info(
    { url, engine, database: config.databaseName, metricsUrl },
    `Plant Store listening on ${url} (${database}; Swagger UI at /swagger${metricsNote})`,
  );
  // Supervisors (and the tests) wait for this line: it does not wait for the next timed flush.
  await flush();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
