import { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

const MIGRATIONS_FOLDER = new URL("../../drizzle/sqlite/", import.meta.url).pathname;
const MIGRATIONS_TABLE = "__drizzle_migrations";
const SYNCHRONOUS_MODES = ["OFF", "NORMAL", "FULL", "EXTRA"];

interface JournalEntry {
  tag: string;
  when: number;
}

/**
 * Applies drizzle/*.sql the way drizzle-orm's SQLite migrator does (same journal, same
 * `__drizzle_migrations` rows, same statement split), so a database file made here is one the
 * real service and its CLI accept as up to date, and the other way round.
 */
function migrate(sqlite: Database): void {
  sqlite.run(
    `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`,
  );
  const last = sqlite.query(`SELECT created_at FROM ${MIGRATIONS_TABLE} ORDER BY created_at DESC LIMIT 1`).values()[0];
  const lastMillis = last === undefined ? undefined : Number(last[0]);
  const journal = JSON.parse(readFileSync(`${MIGRATIONS_FOLDER}meta/_journal.json`, "utf8")) as {
    entries: JournalEntry[];
  };
  const record = sqlite.prepare(`INSERT INTO ${MIGRATIONS_TABLE} ("hash", "created_at") VALUES (?, ?)`);
  sqlite.transaction(() => {
    for (const entry of journal.entries) {
      if (lastMillis !== undefined && lastMillis >= entry.when) continue;
      const text = readFileSync(`${MIGRATIONS_FOLDER}${entry.tag}.sql`, "utf8");
      for (const statement of text.split("--> statement-breakpoint")) {
        if (statement.trim() !== "") sqlite.run(statement);
      }
      record.run(createHash("sha256").update(text).digest("hex"), entry.when);
    }
  })();
}

/**
 * The bare floor's schema (BASELINE_SCHEMA=bare): what the floor's statements need and nothing
 * more, no covering index, no foreign keys, so the bench can tell what the service's schema costs
 * (its migrations, against this) from what its code costs.
 */
export const BARE_SCHEMA = [
  "CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
  `CREATE TABLE IF NOT EXISTS tokens (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL, last_used_at INTEGER, revoked_at INTEGER)`,
  `CREATE TABLE IF NOT EXISTS plants (owner_id INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT NOT NULL, tag TEXT,
    PRIMARY KEY (owner_id, id))`,
];

function schemaSetting(): "service" | "bare" {
  const value = process.env.BASELINE_SCHEMA?.trim() || "service";
  if (value !== "service" && value !== "bare")
    throw new Error(`BASELINE_SCHEMA must be service or bare, not "${value}"`);
  return value;
}

/** Same pragmas as src/db/client.ts; `synchronous` defaults to NORMAL here (the bench may pass FULL). */
export function openDatabase(path: string, synchronousSetting: string | undefined): Database {
  const synchronous = (synchronousSetting?.trim() || "NORMAL").toUpperCase();
  if (!SYNCHRONOUS_MODES.includes(synchronous)) {
    throw new Error(`DB_SYNCHRONOUS must be one of ${SYNCHRONOUS_MODES.join(", ")}`);
  }
  const sqlite = new Database(path, { create: true, strict: true });
  try {
    sqlite.run("PRAGMA busy_timeout = 5000");
    if (path !== ":memory:") sqlite.run("PRAGMA journal_mode = WAL");
    sqlite.run(`PRAGMA synchronous = ${synchronous}`);
    sqlite.run("PRAGMA foreign_keys = ON");
    if (schemaSetting() === "bare") for (const statement of BARE_SCHEMA) sqlite.run(statement);
    else migrate(sqlite);
    // Fails now, with SQLITE_READONLY, rather than at the first write a client sends.
    sqlite.run("BEGIN IMMEDIATE");
    sqlite.run("ROLLBACK");
    return sqlite;
  } catch (error) {
    sqlite.close();
    throw error;
  }
}

/** Folds the WAL back into the main file, as the service does on shutdown. */
export function closeDatabase(sqlite: Database): void {
  sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite.close();
}
