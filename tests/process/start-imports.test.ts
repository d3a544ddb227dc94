/**
 * What a start loads before its first request, read from the bundler's own import graph (not
 * timed): the modules src/index.ts reaches through static imports. Each one kept out here was
 * measured as milliseconds of every cold start (see the comments where it is loaded lazily):
 * node:net, node:crypto, node:dns, Drizzle's query builders and migrator, the OpenAPI
 * generator, pino-pretty and the PostgreSQL stores; and, when they are loaded, the PostgreSQL
 * stores' Drizzle (pg-core, its driver, the schema).
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const ROOT = join(import.meta.dir, "../..");

interface ImportRecord {
  path: string;
  kind: string;
  external?: boolean;
}

/** Every module the entry point loads at once: static imports only, not import() or a require in a function. */
async function loadedAtStart(entry: string): Promise<{ modules: string[]; builtins: string[] }> {
  const result = await Bun.build({
    entrypoints: [join(ROOT, entry)],
    root: ROOT,
    target: "bun",
    metafile: true,
    define: { PLANT_STORE_WRITER_SCRIPT: '"writer.js"' },
  });
  expect(result.success).toBe(true);
  const inputs = (result.metafile as { inputs: Record<string, { imports: ImportRecord[] }> }).inputs;
  const start = Object.keys(inputs).find((path) => path.endsWith(entry)) as string;
  const seen = new Set([start]);
  const builtins = new Set<string>();
  const queue = [start];
  for (let path = queue.pop(); path !== undefined; path = queue.pop()) {
    for (const record of inputs[path]?.imports ?? []) {
      if (record.kind !== "import-statement") continue;
      // A macro's import ("./sql-texts" with { type: "macro" }) runs at build time only.
      if (record.external && record.path.startsWith(".")) continue;
      if (record.external) builtins.add(record.path);
      else if (!seen.has(record.path)) {
        seen.add(record.path);
        queue.push(record.path);
      }
    }
  }
  return { modules: [...seen], builtins: [...builtins].sort() };
}

/** The part of each drizzle-orm module's path inside the package. */
const drizzleParts = (modules: string[]) =>
  modules
    .filter((path) => path.includes("node_modules/drizzle-orm/"))
    .map((path) => path.split("node_modules/drizzle-orm/")[1])
    .sort();

describe("a start", () => {
  test("loads no builtin beyond bun:sqlite, fs and path, and none of the modules kept for later", async () => {
    const { modules, builtins } = await loadedAtStart("src/index.ts");
    expect(builtins).toEqual(["bun:sqlite", "fs", "path"]);
    // Its error classes only (errors.ts tells a failed query by them).
    expect(drizzleParts(modules)).toEqual(["entity.js", "errors.js"]);
    const kept = modules.filter((path) =>
      /node_modules\/(@elysiajs\/openapi|pino-pretty)\/|src\/db\/postgres\/|src\/db\/sqlite\/(schema|write-sql|token-sql|list-query)\.ts|migrations-macro/.test(
        path,
      ),
    );
    expect(kept).toEqual([]);
    // The check can see: the service itself is there.
    expect(modules.some((path) => path.endsWith("src/app.ts"))).toBe(true);
  });

  test("on PostgreSQL, loads its stores without Drizzle's query builders, driver or schema", async () => {
    const { modules } = await loadedAtStart("src/db/postgres/stores.ts");
    expect(drizzleParts(modules)).toEqual(["entity.js", "errors.js"]);
    const kept = modules.filter((path) =>
      /src\/db\/postgres\/(schema|statements|sql-texts|drizzle-view)\.ts|migrations-macro/.test(path),
    );
    expect(kept).toEqual([]);
    // The check can see: the stores are there.
    expect(modules.some((path) => path.endsWith("src/db/postgres/plants.ts"))).toBe(true);
  });
});
