import { Database } from "bun:sqlite";
import { type BunSQLiteDatabase, drizzle } from "drizzle-orm/bun-sqlite";
import type { SynchronousMode } from "../../core/database";
import { applyMigrations } from "../migrations";
import { EMBEDDED_MIGRATIONS, migrationStatus } from "./migrations";
import { refuseForeignDatabase } from "./ownership";
import * as schema from "./schema";

export interface DatabaseOptions {
  path: string;
  synchronous: SynchronousMode;
  migrate?: boolean;
  /** Backup, check: no new file, no migration, no change of journal mode. */
  readonly?: boolean;
}

/** Drizzle's view, for migrations, the CLI and tests; the stores run queries.ts. */
export type AppDatabase = BunSQLiteDatabase<typeof schema> & { $client: Database };

/**
 * Folds the WAL back into the main file so the database is one self-contained file. `true` closes
 * now, its statements finalized: left to be collected, the connection would keep its files open.
 */
export function closeDatabase(sqlite: Database): void {
  sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite.close(true);
}

/**
 * A foreign database is refused before anything is written (ownership.ts). WAL lets the CLI and the
 * server share the file; synchronous=FULL (the default) makes an acknowledged write survive power loss.
 */
export function openDatabase({ path, synchronous, migrate = true, readonly = false }: DatabaseOptions) {
  const sqlite = new Database(path, readonly ? { readonly, strict: true } : { create: true, strict: true });
  try {
    const database = { sqlite, db: drizzle({ client: sqlite, schema }) as AppDatabase };
    sqlite.run("PRAGMA busy_timeout = 5000");
    if (readonly) {
      // SQLite reads nothing until the first query: fail here on a file that is not a database.
      sqlite.query("SELECT count(*) FROM sqlite_master").get();
      return database;
    }
    refuseForeignDatabase(sqlite, path);
    if (path !== ":memory:") sqlite.run("PRAGMA journal_mode = WAL");
    sqlite.run(`PRAGMA synchronous = ${synchronous}`);
    sqlite.run("PRAGMA foreign_keys = ON");
    if (migrate && migrationStatus(sqlite, EMBEDDED_MIGRATIONS).pending.length > 0) {
      applyMigrations(database.db, EMBEDDED_MIGRATIONS);
    }
    // Fails now, with SQLITE_READONLY, rather than at the first write a client sends.
    sqlite.run("BEGIN IMMEDIATE");
    sqlite.run("ROLLBACK");
    return database;
  } catch (error) {
    sqlite.close();
    throw error;
  }
}
