import { Database } from "bun:sqlite";
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate as migrateFromFolder } from "drizzle-orm/bun-sqlite/migrator";
import { migrationsFolderOf } from "../../scripts/bundle-migrations";
import { closeDatabase, openDatabase } from "../../src/db/sqlite/client";
import { EMBEDDED_MIGRATIONS } from "../../src/db/sqlite/migrations";
import { onSqlite, writeClashingDatabase } from "../support/helpers";
import { runCli, runToExit, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { usersOnFile } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

let scratch: ReturnType<typeof scratchDir>;
beforeEach(() => {
  scratch = scratchDir();
});
afterEach(() => scratch.cleanup());

/**
 * Runs a package.json script as a user would (`bun run cli check`, `bun run db:migrate`);
 * `--silent` keeps bun's own "$ command" and "exited with code" lines out of stderr.
 */
function runScript(script: string, args: string[], env: Record<string, string>) {
  return runToExit(["bun", "run", "--silent", script, ...args], { env });
}

const cli = (args: string[], env: Record<string, string>) => runScript("cli", args, env);

const lines = (text: string) => text.trim().split("\n").filter(Boolean);

/** Every row of every table, in key order, with exact integers: what a restore must give back. */
function allRows(path: string) {
  const db = new Database(path, { readonly: true, safeIntegers: true });
  const rows = {
    users: db.query("SELECT * FROM users ORDER BY id").all(),
    tokens: db.query("SELECT * FROM tokens ORDER BY id").all(),
    plants: db.query("SELECT * FROM plants ORDER BY owner_id, id").all(),
    migrations: db.query("SELECT hash, created_at FROM __drizzle_migrations ORDER BY created_at").all(),
  };
  db.close();
  return rows;
}

function tableNames(path: string): string[] {
  const db = new Database(path, { readonly: true });
  const names = db
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    .all()
    .map((row) => row.name);
  db.close();
  return names;
}

/** A migrated database with two users, their tokens and plants; the writer stays open. */
async function populatedDatabase(path: string) {
  await usersOnFile(path, ["alice", "bob"]);
  const { sqlite } = openDatabase({ path, synchronous: "FULL" });
  const insert = sqlite.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, ?)");
  insert.run(1, 9223372036854775807n, "Fern", null);
  insert.run(1, -9223372036854775808n, "Cactus", "");
  for (let id = 0; id < 500; id++) insert.run(2, id, `Plant ${id}`, id % 2 ? "even" : null);
  return sqlite;
}

describe.if(onSqlite)("bun run cli backup <file>", () => {
  test("copies the live database, WAL included, into a file that opens with identical rows", async () => {
    const live = join(scratch.dir, "plants.sqlite");
    const copy = join(scratch.dir, "backup.sqlite");
    // Left open: the rows are still in the WAL, not yet in the main file.
    const writer = await populatedDatabase(live);
    expect(existsSync(`${live}-wal`)).toBe(true);

    const { stdout, stderr, code } = await cli(["backup", copy], { DATABASE_URL: live });
    expect(stderr).toBe("");
    expect(code).toBe(0);
    const size = readFileSync(copy).length;
    expect(lines(stdout)).toEqual([
      `Backup written to ${copy}`,
      `Size: ${size} bytes`,
      "Rows: idempotency_keys 0, plant_changes 0, plants 502, tokens 2, users 2, webhook_attempts 0, webhook_deliveries 0, webhooks 0",
    ]);
    expect(allRows(copy)).toEqual(allRows(live));
    // One self-contained file: nothing beside it, not even the temporary name it was written under.
    expect(readdirSync(scratch.dir).sort()).toEqual([
      "backup.sqlite",
      "plants.sqlite",
      "plants.sqlite-shm",
      "plants.sqlite-wal",
    ]);

    // Restored in place of the live file, the copy is what the server opens.
    writer.close();
    const restored = join(scratch.dir, "restored.sqlite");
    writeFileSync(restored, readFileSync(copy));
    const reopened = openDatabase({ path: restored, synchronous: "FULL" });
    expect(reopened.sqlite.query("SELECT count(*) AS plants FROM plants").get()).toEqual({ plants: 502 });
    closeDatabase(reopened.sqlite);
    expect(allRows(restored)).toEqual(allRows(live));
  });

  test("refuses a file that exists and leaves it as it was", async () => {
    const live = join(scratch.dir, "plants.sqlite");
    (await populatedDatabase(live)).close();
    const target = join(scratch.dir, "precious.txt");
    writeFileSync(target, "not to be overwritten");

    const { stdout, stderr, code } = await cli(["backup", target], { DATABASE_URL: live });
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(lines(stderr)).toEqual([
      `plant-store: backup not written: ${target} already exists; choose a new file name`,
    ]);
    expect(readFileSync(target, "utf8")).toBe("not to be overwritten");
    expect(readdirSync(scratch.dir).filter((name) => name.includes("partial"))).toEqual([]);
  });

  test("says so when there is no database, and creates none", async () => {
    const missing = join(scratch.dir, "missing.sqlite");
    const { stderr, code } = await cli(["backup", join(scratch.dir, "copy.sqlite")], { DATABASE_URL: missing });
    expect(code).toBe(1);
    expect(lines(stderr)).toEqual([`plant-store: no database at ${missing} (DATABASE_URL); nothing to back up`]);
    expect(readdirSync(scratch.dir)).toEqual([]);
  });
});

describe.if(onSqlite)("bun run cli check", () => {
  test("a healthy database: every check passes, exit 0", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    (await populatedDatabase(path)).close();
    const { stdout, stderr, code } = await cli(["check"], { DATABASE_URL: path });
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(lines(stdout)).toEqual([
      `Checked ${path}`,
      "integrity: ok",
      "foreign keys: ok",
      `migrations: ${EMBEDDED_MIGRATIONS.length} applied, none pending`,
      "All checks passed.",
    ]);
  });

  test("reports a migration missing from __drizzle_migrations and does not apply it", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    const writer = await populatedDatabase(path);
    writer.run("DELETE FROM __drizzle_migrations");
    writer.close();

    const { stdout, stderr, code } = await cli(["check"], { DATABASE_URL: path });
    expect(code).toBe(1);
    expect(lines(stderr)).toEqual(
      EMBEDDED_MIGRATIONS.map(
        (migration) => `plant-store: migrations: ${migration.tag} is not applied yet (bun run db:migrate applies it)`,
      ),
    );
    expect(stdout).toContain(`${EMBEDDED_MIGRATIONS.length} problem`);
    expect(allRows(path).migrations).toEqual([]);
  });

  test("reports every migration pending on an empty database, leaving it empty", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    writeFileSync(path, "");
    const { stderr, code } = await cli(["check"], { DATABASE_URL: path });
    expect(code).toBe(1);
    expect(lines(stderr)).toHaveLength(EMBEDDED_MIGRATIONS.length);
    expect(stderr).toContain("0000_init is not applied yet");
    expect(tableNames(path)).toEqual([]);
  });

  test("a file that is not a database: one line, exit 1", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    writeFileSync(path, Buffer.alloc(8192, 0x5a));
    const { stderr, code } = await cli(["check"], { DATABASE_URL: path });
    expect(code).toBe(1);
    expect(lines(stderr)).toEqual([`plant-store: cannot open the database at ${path}: file is not a database`]);
  });

  test("a damaged index: SQLite's own findings, one line each, exit 1", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    const { sqlite } = openDatabase({ path, synchronous: "FULL" });
    const insert = sqlite.prepare("INSERT INTO users (name, created_at) VALUES (?, 0)");
    for (let i = 0; i < 50; i++) insert.run(`user-${i}`);
    const { rootpage } = sqlite
      .query<{ rootpage: number }, []>("SELECT rootpage FROM sqlite_master WHERE name = 'users_name_unique'")
      .get() as { rootpage: number };
    const { page_size: pageSize } = sqlite.query<{ page_size: number }, []>("PRAGMA page_size").get() as {
      page_size: number;
    };
    closeDatabase(sqlite);
    // Rewrite one key inside the index page: the page stays well formed, the index no longer
    // matches the table.
    const bytes = readFileSync(path);
    const at = bytes.indexOf("user-42", (rootpage - 1) * pageSize);
    expect(at).toBeGreaterThan((rootpage - 1) * pageSize);
    expect(at).toBeLessThan(rootpage * pageSize);
    bytes.write("user-x2", at);
    writeFileSync(path, bytes);

    const { stdout, stderr, code } = await cli(["check"], { DATABASE_URL: path });
    expect(code).toBe(1);
    const problems = lines(stderr);
    expect(problems.length).toBeGreaterThan(0);
    for (const problem of problems) expect(problem).toMatch(/^plant-store: integrity: .*users_name_unique/);
    expect(stdout).toContain("foreign keys: ok");
  });

  test("says so when there is no database, and creates none", async () => {
    const missing = join(scratch.dir, "missing.sqlite");
    const { stderr, code } = await cli(["check"], { DATABASE_URL: missing });
    expect(code).toBe(1);
    expect(lines(stderr)).toEqual([`plant-store: no database at ${missing} (DATABASE_URL); nothing to check`]);
    expect(readdirSync(scratch.dir)).toEqual([]);
  });
});

describe.if(onSqlite)("bun run db:migrate", () => {
  test("creates the schema in an empty file; a second run is up to date", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    writeFileSync(path, "");
    const first = await runScript("db:migrate", [], { DATABASE_URL: path });
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(lines(first.stdout)).toEqual([
      `Applied ${EMBEDDED_MIGRATIONS.length} migrations to ${path}: ${EMBEDDED_MIGRATIONS.map((migration) => migration.tag).join(", ")}`,
    ]);
    expect(tableNames(path)).toEqual([
      "__drizzle_migrations",
      "idempotency_keys",
      "plant_changes",
      "plants",
      "sqlite_sequence",
      "tokens",
      "users",
      "webhook_attempts",
      "webhook_deliveries",
      "webhooks",
    ]);

    const second = await runScript("db:migrate", [], { DATABASE_URL: path });
    expect(second.code).toBe(0);
    expect(lines(second.stdout)).toEqual([`${path} is up to date: no pending migrations.`]);
    expect(allRows(path).migrations).toHaveLength(EMBEDDED_MIGRATIONS.length);
  });

  test("records exactly what Drizzle's folder migrator records, so neither re-runs the other's work", async () => {
    const byFolder = join(scratch.dir, "by-folder.sqlite");
    const folderDb = new Database(byFolder, { create: true });
    migrateFromFolder(drizzle({ client: folderDb }), { migrationsFolder: migrationsFolderOf("sqlite") });
    folderDb.close();

    const embedded = join(scratch.dir, "embedded.sqlite");
    openDatabase({ path: embedded, synchronous: "FULL" }).sqlite.close();
    expect(allRows(embedded).migrations).toEqual(allRows(byFolder).migrations);

    // A database migrated before the migrations were embedded is up to date for the new code.
    const { stdout, code } = await runScript("db:migrate", [], { DATABASE_URL: byFolder });
    expect(code).toBe(0);
    expect(stdout).toContain("up to date");
    expect((await cli(["check"], { DATABASE_URL: byFolder })).code).toBe(0);
  });

  test("a migration that fails is rolled back: one line, exit 1, the data kept", async () => {
    const path = join(scratch.dir, "plants.sqlite");
    writeClashingDatabase(path);
    const { stderr, code } = await runScript("db:migrate", [], { DATABASE_URL: path });
    expect(code).toBe(1);
    expect(lines(stderr)).toEqual([
      `plant-store: migration failed and was rolled back: SQLiteError: table \`plants\` already exists`,
    ]);
    expect(tableNames(path)).toEqual(["__drizzle_migrations", "plants"]);
    const after = new Database(path, { readonly: true });
    expect(after.query("SELECT * FROM plants").all()).toEqual([{ something_else: "keep me" }]);
    after.close();
  });
});

describe.if(onSqlite)("a backup taken while the server is writing", () => {
  test("holds every create acknowledged before it started, and nothing the live database lacks", async () => {
    const live = join(scratch.dir, "plants.sqlite");
    const copy = join(scratch.dir, "backup.sqlite");
    const env = { DATABASE_URL: live, RATE_LIMIT_PER_MINUTE: "0" };
    const issued = await runCli(["token", "create", "--user", "loader"], env);
    expect(issued.code).toBe(0);
    const token = lines(issued.stdout).at(-1) as string;
    const server = await startServer(env);
    let stopped: Promise<number> | undefined;

    const before: number[] = [];
    const during: number[] = [];
    let backupStarted = false;
    let stop = false;
    let nextId = 1;
    let reached: () => void = () => {};
    const warmedUp = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const worker = async () => {
      while (!stop) {
        const id = nextId++;
        const response = await fetch(`${server.url}/plants`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ id, name: `Plant ${id}` }),
        });
        await response.arrayBuffer();
        if (response.status !== 200) throw new Error(`create ${id} got ${response.status}`);
        // Counted as "before" only if the 200 was in hand when the backup command was started.
        (backupStarted ? during : before).push(id);
        if (before.length >= 300) reached();
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    try {
      await Promise.race([warmedUp, Promise.all(workers)]);
      backupStarted = true;
      const backup = await cli(["backup", copy], env);
      expect(backup.stderr).toBe("");
      expect(backup.code).toBe(0);
    } finally {
      stop = true;
      await Promise.allSettled(workers);
      stopped = server.stop();
    }
    await Promise.all(workers);
    expect(await stopped).toBe(0);
    // The load really ran while the copy was being made.
    expect(during.length).toBeGreaterThan(0);

    const readIds = (path: string) => {
      const db = new Database(path, { readonly: true });
      const rows = db.query<{ id: number; name: string }, []>("SELECT id, name FROM plants ORDER BY id").all();
      db.close();
      return rows;
    };
    const copied = readIds(copy);
    const copiedIds = new Set(copied.map((row) => row.id));
    for (const id of before) expect(copiedIds.has(id)).toBe(true);
    const liveRows = new Map(readIds(live).map((row) => [row.id, row.name]));
    for (const row of copied) expect(liveRows.get(row.id)).toBe(row.name);
    expect(copied.length).toBeGreaterThanOrEqual(before.length);

    const check = await cli(["check"], { DATABASE_URL: copy });
    expect(check.stderr).toBe("");
    expect(check.code).toBe(0);
  });
});
