import { createApp } from "./app";
import { createTokenStore } from "./auth/tokens";
import { ConfigError, ensureDatabaseFolder, loadConfig } from "./config";
import { openDatabase } from "./db/client";

/** Past this Bun answers a bare 413 itself; below it the app answers with the Error body. */
const MAX_DECLARED_BODY_BYTES = 2 ** 31 - 1;

function fail(message: string): never {
  console.error(`plant-store: ${message}`);
  process.exit(1);
}

let config: ReturnType<typeof loadConfig>;
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
  fail(`cannot open the database at ${config.databasePath}: ${(error as Error).message}`);
}
const { sqlite, db } = database;

const issued = createTokenStore(db).bootstrap();
if (issued) {
  console.log(`First start: created user "${issued.user}" with this token (shown once, store it now):`);
  console.log(issued.token);
  console.log(`Use it as: curl -H "Authorization: Bearer <token>" http://localhost:${config.port}/plants`);
}

const app = createApp({ db, bodyLimitBytes: config.bodyLimitBytes });
let server: ReturnType<typeof Bun.serve>;
try {
  // The app answers over-size bodies itself with the Error body (a declared length up front,
  // a chunked body once it passes the limit); Bun's own cap is only a backstop.
  app.listen({ port: config.port, hostname: config.host, maxRequestBodySize: MAX_DECLARED_BODY_BYTES });
  server = app.server as ReturnType<typeof Bun.serve>;
} catch (error) {
  sqlite.close();
  fail(`cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
}
console.log(`Plant Store listening on http://${config.host}:${server.port} (Swagger UI at /swagger)`);

function shutdown(signal: string) {
  console.log(`${signal} received, shutting down`);
  server.stop();
  sqlite.close();
  process.exit(0);
}
process.on("SIGINT", () => shutdown("SIGINT"));
process.on("SIGTERM", () => shutdown("SIGTERM"));
