import { createApp } from "./app";
import { createTokenStore } from "./auth/tokens";
import { type Config, ConfigError, ensureDatabaseFolder, loadConfig } from "./config";
import { closeDatabase, openDatabase } from "./db/client";
import { faultDetail, faultSummary } from "./http/errors";
import { serve } from "./server";

function fail(message: string): never {
  console.error(`plant-store: ${message}`);
  process.exit(1);
}

const log = (message: string, detail: unknown) => console.error(message, faultDetail(detail));

let config: Config;
try {
  config = loadConfig();
  ensureDatabaseFolder(config);
} catch (error) {
  if (error instanceof ConfigError) fail(error.message);
  throw error;
}

let database: ReturnType<typeof openDatabase>;
try {
  database = openDatabase({ path: config.databasePath, synchronous: config.synchronous });
} catch (error) {
  fail(`cannot open the database at ${config.databasePath}: ${faultSummary(error)}`);
}
const { sqlite, db } = database;

const issued = createTokenStore(db).bootstrap();
if (issued) {
  console.log(`First start: created user "${issued.user}" with this token (shown once, store it now):`);
  console.log(issued.token);
  console.log(`Use it as: curl -H "Authorization: Bearer <token>" http://localhost:${config.port}/plants`);
}

const app = createApp({ db, config, log });
let running: ReturnType<typeof serve>;
try {
  running = serve(app, { ...config, log });
} catch (error) {
  sqlite.close();
  fail(`cannot listen on ${config.host}:${config.port}: ${faultSummary(error)}`);
}

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`${signal} received: finishing requests in flight, then closing`);
  const cutOff = await running.drain(config.shutdownTimeoutMs);
  if (cutOff > 0) console.error(`plant-store: ${cutOff} request(s) still in flight at the shutdown deadline`);
  closeDatabase(sqlite);
  console.log("Stopped cleanly.");
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
// Announced only once the handlers are in place: a signal sent on seeing this line is handled.
console.log(`Plant Store listening on http://${config.host}:${running.server.port} (Swagger UI at /swagger)`);
