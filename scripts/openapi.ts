/**
 * Writes the OpenAPI document the service serves at /swagger/json to openapi.json, so that
 * clients can generate their types without a running server.
 *
 *   bun run openapi                 write openapi.json at the repository root
 *   bun run openapi --check         exit 1 when openapi.json differs from what is served
 *   bun run openapi [--check] FILE  the same for another file
 */
import { relative } from "node:path";
import { createApp } from "../src/app";
import { loadConfig } from "../src/config";
import { openDatabase } from "../src/db/sqlite/client";
import { createSqliteStores } from "../src/db/sqlite/stores";

export const OPENAPI_FILE = new URL("../openapi.json", import.meta.url).pathname;

/** The document exactly as the service serves it, from an app built in process on :memory:. */
export async function servedDocument(): Promise<unknown> {
  // The defaults of a real start, so the document is the one a deployment serves.
  const config = loadConfig({ DATABASE_URL: ":memory:" });
  const { sqlite } = openDatabase({ path: ":memory:", synchronous: config.synchronous });
  const log = (message: string, detail: unknown) => console.error(message, detail);
  const stores = createSqliteStores(sqlite, {
    maxQueued: config.maxInFlight,
    lockTimeoutMs: config.writeLockTimeoutMs,
    log,
  });
  try {
    const app = createApp({ stores, config, log });
    const response = await app.handle(new Request("http://localhost/swagger/json"));
    if (response.status !== 200) throw new Error(`GET /swagger/json answered ${response.status}`);
    return await response.json();
  } finally {
    await stores.close();
  }
}

/** Stable text: two-space indentation and a final newline, so regenerating never churns. */
export const formatDocument = (document: unknown) => `${JSON.stringify(document, null, 2)}\n`;

async function main(args: string[]): Promise<number> {
  const check = args.includes("--check");
  const unknown = args.filter((arg) => arg.startsWith("-") && arg !== "--check");
  const files = args.filter((arg) => !arg.startsWith("-"));
  if (unknown.length > 0 || files.length > 1) {
    console.error("usage: bun run openapi [--check] [file]");
    return 2;
  }
  const file = files[0] ?? OPENAPI_FILE;
  const shown = relative(process.cwd(), file) || file;
  const expected = formatDocument(await servedDocument());
  if (!check) {
    await Bun.write(file, expected);
    console.log(`wrote ${shown}`);
    return 0;
  }
  const current = await Bun.file(file)
    .text()
    .catch(() => undefined);
  if (current === expected) {
    console.log(`${shown} is up to date`);
    return 0;
  }
  const why = current === undefined ? "is missing" : "differs from the document the service serves at /swagger/json";
  console.error(`${shown} ${why}; run \`bun run openapi\` and commit the result.`);
  return 1;
}

if (import.meta.main) process.exit(await main(Bun.argv.slice(2)));
