import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../../src/db/sqlite/client";
import { onSqlite, writeClashingDatabase } from "../support/helpers";
import { runToExit, scratchDir } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

let scratch: ReturnType<typeof scratchDir>;
beforeEach(() => {
  scratch = scratchDir();
});
afterEach(() => scratch.cleanup());

function overwrite(path: string, offset: number, bytes: number) {
  const file = openSync(path, "r+");
  writeSync(file, Buffer.alloc(bytes, 0xa5), 0, bytes, offset);
  closeSync(file);
}

/** Where the root page of `name` lies in the file: its offset and length. */
function pageOf(path: string, name: string): [number, number] {
  const reader = new Database(path, { readonly: true });
  const { rootpage } = reader.query("SELECT rootpage FROM sqlite_master WHERE name = ?").get(name) as {
    rootpage: number;
  };
  const { page_size: pageSize } = reader.query("PRAGMA page_size").get() as { page_size: number };
  reader.close();
  return [(rootpage - 1) * pageSize, pageSize];
}

/** Runs the server to its exit; a start-up failure must exit on its own. */
async function startExpectingFailure(databaseUrl: string) {
  const { stdout, stderr, code } = await runToExit(["bun", "src/index.ts"], {
    env: { PORT: "0", HOST: "127.0.0.1", DATABASE_URL: databaseUrl },
  });
  expect(code).not.toBe(0);
  expect(stdout).not.toContain("listening");
  const lines = stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  return lines[0] as string;
}

describe.if(onSqlite)("start-up refuses a database it cannot trust", () => {
  test("a corrupt file", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    writeFileSync(path, Buffer.alloc(8192, 0x5a));
    expect(await startExpectingFailure(path)).toBe(
      `plant-store: cannot open the database at ${path}: file is not a database`,
    );
  });

  // Found by SQLite when it first reads the file; start-up does not read every page (docs/architecture.md).
  for (const [damage, harm] of [
    ["truncated", (path: string) => truncateSync(path, statSync(path).size / 2)],
    ["with its schema page overwritten", (path: string) => overwrite(path, 100, 2800)],
    // Read by the first-start token check, right after the migrations.
    ["with its tokens table overwritten", (path: string) => overwrite(path, ...pageOf(path, "tokens"))],
  ] as const) {
    test(`a valid database ${damage}`, async () => {
      const path = join(scratch.dir, "plants.sqlite");
      const { sqlite } = openDatabase({ path, synchronous: "FULL" });
      const insert = sqlite.prepare("INSERT INTO users (name, created_at) VALUES (?, 0)");
      for (let i = 0; i < 2000; i++) insert.run(`user-${i}`);
      // As a stopped server leaves it: one file. close(true) finalizes every statement, so no
      // half-closed connection here keeps its view of the file (and the -shm) alive.
      sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
      sqlite.close(true);
      expect(readdirSync(scratch.dir)).toEqual(["plants.sqlite"]);
      harm(path);
      expect(await startExpectingFailure(path)).toBe(
        `plant-store: cannot open the database at ${path}: database disk image is malformed`,
      );
    });
  }

  test("a path that is a folder", async () => {
    const path = join(scratch.dir, "a-folder");
    mkdirSync(path);
    expect(await startExpectingFailure(path)).toStartWith(`plant-store: cannot open the database at ${path}:`);
  });

  test("an unwritable file", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    new Database(path).close();
    // root ignores file modes; the immutable attribute stops root too.
    const isRoot = process.getuid?.() === 0;
    if (isRoot) expect(spawnSync("chattr", ["+i", path]).status).toBe(0);
    else chmodSync(path, 0o444);
    try {
      expect(await startExpectingFailure(path)).toMatch(
        new RegExp(`^plant-store: cannot open the database at ${path}: .*readonly`),
      );
    } finally {
      if (isRoot) spawnSync("chattr", ["-i", path]);
    }
  });

  test("a foreign database: one line naming what it holds, and the file left byte for byte", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    const foreign = new Database(path);
    foreign.run("CREATE TABLE x (y TEXT)");
    foreign.run("INSERT INTO x VALUES ('keep me')");
    foreign.close();
    const before = readFileSync(path);

    expect(await startExpectingFailure(path)).toBe(
      `plant-store: the database at ${path} is not a Plant Store database: it holds table "x" and no migrations table; point DATABASE_URL at a new file or at a Plant Store database`,
    );
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(scratch.dir)).toEqual(["plants.sqlite"]);
  });

  test("a migration that fails, leaving the database as it was", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    writeClashingDatabase(path);
    expect(await startExpectingFailure(path)).toBe(
      `plant-store: cannot open the database at ${path}: SQLiteError: table \`plants\` already exists`,
    );
    const after = new Database(path, { readonly: true });
    expect(after.query("SELECT * FROM plants").all()).toEqual([{ something_else: "keep me" }]);
    expect(after.query("SELECT name FROM sqlite_master WHERE name = 'users'").all()).toEqual([]);
    after.close();
  });
});

describe.if(onSqlite)("the CLI refuses a foreign database too", () => {
  for (const args of [["migrate"], ["token", "create", "--user", "alice"]]) {
    test(`bun run cli ${args.join(" ")}: one line, exit 1, the file left byte for byte`, async () => {
      const path = join(scratch.dir, "plants.sqlite");
      const foreign = new Database(path);
      foreign.run("CREATE TABLE x (y TEXT)");
      foreign.close();
      const before = readFileSync(path);

      // --silent keeps bun's own "$ command" and "exited with code" lines out of stderr.
      const { stdout, stderr, code } = await runToExit(["bun", "run", "--silent", "cli", ...args], {
        env: { DATABASE_URL: path },
      });
      expect(code).toBe(1);
      expect(stdout).toBe("");
      expect(stderr.trim().split("\n")).toEqual([
        `plant-store: the database at ${path} is not a Plant Store database: it holds table "x" and no migrations table; point DATABASE_URL at a new file or at a Plant Store database`,
      ]);
      expect(readFileSync(path).equals(before)).toBe(true);
      expect(readdirSync(scratch.dir)).toEqual(["plants.sqlite"]);
    });
  }
});
