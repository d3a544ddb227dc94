import { Database } from "bun:sqlite";
import { type BunSQLiteDatabase, drizzle } from "drizzle-orm/bun-sqlite";
import type { SynchronousMode } from "../../core/database";
import { applyMigrations, EMBEDDED_MIGRATIONS, migrationStatus } from "./migrations";
import { refuseForeignDatabase } from "./ownership";
import * as schema from "./schema";

export interface DatabaseOptions {
  path: string;
  synchronous: SynchronousMode;
  /** Brings the schema up to date on open (the default); `false` opens the database as it is. */
  migrate?: boolean;
  /**
   * Opens the file as it is and only reads it (backup, check): no new file when it is missing,
   * no migration, no change of journal mode. Fails here if the file is not a database.
   */
  readonly?: boolean;
}

/** Drizzle's view of the database, for migrations, the CLI's and the tests' queries; the stores run queries.ts. */
export type AppDatabase = BunSQLiteDatabase<typeof schema> & { $client: Database };

/** Folds the WAL back into the main file so the database is one self-contained file. */
export function closeDatabase(sqlite: Database): void {
  sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite.close();
}

/** `sqlite`, and Drizzle's view of it (migrations, the CLI, tests). */
function opened(sqlite: Database): { sqlite: Database; db: AppDatabase } {
  return { sqlite, db: drizzle({ client: sqlite, schema }) as AppDatabase };
}

/**
 * Opens SQLite with the pragmas every connection needs, then brings the schema up to date with
 * the migrations embedded at build time (see migrations.ts). A database that is someone else's
 * is refused before anything is written to it (see ownership.ts). WAL lets the CLI and the server
 * share the file; synchronous=FULL (the default) makes an acknowledged write survive power loss.
 */
export function openDatabase({ path, synchronous, migrate = true, readonly = false }: DatabaseOptions) {
  const sqlite = new Database(path, readonly ? { readonly, strict: true } : { create: true, strict: true });
  try {
    sqlite.run("PRAGMA busy_timeout = 5000");
    if (readonly) {
      // SQLite reads nothing until the first query: fail here on a file that is not a database.
      sqlite.query("SELECT count(*) FROM sqlite_master").get();
      return opened(sqlite);
    }
    refuseForeignDatabase(sqlite, path);
    if (path !== ":memory:") sqlite.run("PRAGMA journal_mode = WAL");
    sqlite.run(`PRAGMA synchronous = ${synchronous}`);
    sqlite.run("PRAGMA foreign_keys = ON");
    const database = opened(sqlite);
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
