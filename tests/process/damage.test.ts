import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { closeSync, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { DrizzleQueryError } from "drizzle-orm";
import {
  createStoreHealth,
  DAMAGED_CHECK_LOG_MESSAGE,
  DAMAGED_LOG_MESSAGE,
  DAMAGED_READINESS_MESSAGE,
  DAMAGED_REQUEST_MESSAGE,
  isDatabaseDamage,
} from "../../src/core/health";
import { closeDatabase, openDatabase } from "../../src/db/sqlite/client";
import { plants } from "../../src/db/sqlite/schema";
import { onSqlite } from "../support/helpers";
import { runToExit, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";
import { type TestUser, usersOnFile } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

let scratch: ReturnType<typeof scratchDir>;
beforeEach(async () => {
  scratch = scratchDir();
});
afterEach(() => scratch.cleanup());

const PLANTS = 5000;
const DAMAGED_BYTES = 2800;

/**
 * The case: a valid database of one user's plants, then 2.8 KB overwritten in the
 * middle of the file, inside the plants table's pages. Returns that user's token.
 */
async function damagedDatabase(path: string): Promise<string> {
  const [{ token }] = (await usersOnFile(path)) as [TestUser];
  const { sqlite } = openDatabase({ path, synchronous: "FULL" });
  const insert = sqlite.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (1, ?, ?, 'seed')");
  sqlite.transaction(() => {
    for (let id = 1; id <= PLANTS; id++) insert.run(id, `Plant ${id}`);
  })();
  const leaves = sqlite
    .query<{ pageno: number }, []>(
      "SELECT pageno FROM dbstat WHERE name = 'plants' AND pagetype = 'leaf' ORDER BY pageno",
    )
    .all();
  const { page_size: pageSize } = sqlite.query<{ page_size: number }, []>("PRAGMA page_size").get() as {
    page_size: number;
  };
  // As a stopped server leaves it: one file, and no half-closed connection here (close(true)
  // finalizes every statement) that keeps its view of the file alive beside the server's.
  sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite.close(true);
  const middle = leaves[leaves.length >> 1]?.pageno as number;
  expect(middle).toBeGreaterThan(1);
  const file = openSync(path, "r+");
  writeSync(file, Buffer.alloc(DAMAGED_BYTES, 0xa5), 0, DAMAGED_BYTES, (middle - 1) * pageSize + 512);
  closeSync(file);
  return token;
}

/** What `query` throws, or undefined. */
function errorFrom(query: () => unknown): unknown {
  try {
    query();
  } catch (error) {
    return error;
  }
  return undefined;
}

// Damage is a SQLite file's: these tests write, break and read SQLite files.
describe.if(onSqlite)("telling damage from other faults", () => {
  test("a damaged page, read through the driver or through Drizzle, or wrapped in Drizzle's error, is damage", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    await damagedDatabase(path);
    const { sqlite, db } = openDatabase({ path, synchronous: "FULL", readonly: true });
    const throughDriver = errorFrom(() => sqlite.query("SELECT * FROM plants").all());
    const throughDrizzle = errorFrom(() => db.select().from(plants).all());
    sqlite.close();
    expect(String(throughDriver)).toContain("malformed");
    expect(isDatabaseDamage(throughDriver)).toBe(true);
    expect(isDatabaseDamage(throughDrizzle)).toBe(true);
    expect(isDatabaseDamage(new DrizzleQueryError("SELECT * FROM plants", [], throughDriver as Error))).toBe(true);
  });

  test("a file that is no longer a database is damage", () => {
    const path = join(scratch.dir, "plants.sqlite");
    writeFileSync(path, Buffer.alloc(8192, 0x5a));
    const sqlite = new Database(path);
    const error = errorFrom(() => sqlite.query("SELECT * FROM sqlite_master").all());
    sqlite.close();
    expect(isDatabaseDamage(error)).toBe(true);
  });

  test("a constraint, a read-only file or a closed connection is not", () => {
    const path = join(scratch.dir, "plants.sqlite");
    const { sqlite } = openDatabase({ path, synchronous: "FULL" });
    sqlite.run("INSERT INTO users (id, name, created_at) VALUES (1, 'a', 0)");
    const constraint = errorFrom(() => sqlite.run("INSERT INTO users (id, name, created_at) VALUES (1, 'a', 0)"));
    closeDatabase(sqlite);
    const reader = new Database(path, { readonly: true });
    const readOnly = errorFrom(() => reader.run("DELETE FROM users"));
    reader.close();
    const closed = errorFrom(() => reader.query("SELECT 1").get());
    for (const error of [constraint, readOnly, closed, new Error("database disk image is malformed"), "corrupt"]) {
      expect(error).toBeDefined();
      expect(isDatabaseDamage(error)).toBe(false);
    }
  });

  test("the store's health turns damaged on the first damage and stays so", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    await damagedDatabase(path);
    const sqlite = new Database(path, { readonly: true });
    const damage = errorFrom(() => sqlite.query("SELECT * FROM plants").all());
    sqlite.close();
    const health = createStoreHealth();
    expect(health.noteFault(new Error("something else"))).toBe(false);
    expect(health.damaged).toBe(false);
    expect(health.noteFault(damage)).toBe(true);
    expect(health.damaged).toBe(true);
    expect(health.noteFault(new Error("something else"))).toBe(false);
    expect(health.damaged).toBe(true);
  });
});

/** The error lines of a server's output, access lines left out. */
function faultLines(output: string): Array<{ msg: string }> {
  return output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line))
    .filter((line) => line.level === "error" && line.msg !== "request");
}

describe.if(onSqlite)("a database damaged inside the file", () => {
  test("with no request reading the damage, readiness turns 503 within 10 s of start while /healthz answers at once", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    await damagedDatabase(path);
    const began = performance.now();
    const server = await startServer({ DATABASE_URL: path });
    const slowestHealthz: number[] = [];
    try {
      // Start-up reads the header and the schema only; the integrity pass after it reads the rest.
      const ready = await until(
        async () => {
          const asked = performance.now();
          expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
          slowestHealthz.push(performance.now() - asked);
          return fetch(`${server.url}/readyz`);
        },
        { holds: (response) => response.status === 503, timeoutMs: 10_000, intervalMs: 50, what: "/readyz 503" },
      );
      expect(performance.now() - began).toBeLessThan(10_000);
      expect(await ready.json()).toEqual({ error: 503, message: "The store's database is damaged." });
      expect(Math.max(...slowestHealthz)).toBeLessThan(500);
    } finally {
      await server.stop();
    }
    const faults = faultLines(await server.output());
    expect(faults.map((line) => line.msg)).toEqual([DAMAGED_CHECK_LOG_MESSAGE]);
    expect(JSON.stringify(faults[0])).toMatch(/Tree \d+ page \d+|malformed/);
  });

  test("the first request that reads the damage gets 503 with the Error body, and readiness is 503 from then on", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    const token = await damagedDatabase(path);
    const server = await startServer({ DATABASE_URL: path });
    try {
      // An answer longer than one chunk is streamed: damage met before it starts is a 503
      // with the Error body; damage met in a later chunk cuts the body short.
      const list = await fetch(`${server.url}/plants?limit=${PLANTS}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      if (list.status === 503) {
        expect(await list.json()).toEqual({ error: 503, message: DAMAGED_REQUEST_MESSAGE });
      } else {
        expect(list.status).toBe(200);
        const body = await list.text().catch(() => "(cut)");
        expect(() => JSON.parse(body)).toThrow();
      }

      const ready = await fetch(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ error: 503, message: DAMAGED_READINESS_MESSAGE });
      await server.waitForOutput(/"level":"error".*the database is damaged/);
    } finally {
      await server.stop();
    }
    // The request's fault line, and the integrity pass's (whichever came first).
    const faults = faultLines(await server.output()).filter((line) => line.msg !== DAMAGED_CHECK_LOG_MESSAGE);
    expect(faults.map((line) => line.msg)).toEqual([DAMAGED_LOG_MESSAGE]);
    expect(JSON.stringify(faults[0])).toContain("database disk image is malformed");

    // The operator's full check finds it: SQLite's own findings, one line each.
    const check = await runToExit(["bun", "run", "--silent", "cli", "check"], { env: { DATABASE_URL: path } });
    expect(check.code).toBe(1);
    const problems = check.stderr.trim().split("\n");
    const integrity = problems.filter((problem) => problem.startsWith("plant-store: integrity: "));
    expect(integrity.length).toBeGreaterThan(0);
    for (const problem of integrity) expect(problem).toMatch(/^plant-store: integrity: Tree \d+ page \d+ cell \d+: /);
    // The foreign key check reads the damaged table too, and says so in one line.
    expect(problems.slice(integrity.length)).toEqual(["plant-store: foreign keys: database disk image is malformed"]);
    expect(check.stdout).toContain(`${problems.length} problems found.`);
  });
});
