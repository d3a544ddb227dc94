import { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import type { SynchronousMode } from "../config";
import * as schema from "./schema";

export const MIGRATIONS_FOLDER = new URL("../../drizzle", import.meta.url).pathname;

export interface DatabaseOptions {
  path: string;
  synchronous: SynchronousMode;
  migrationsFolder?: string;
}

export type AppDatabase = ReturnType<typeof wrap>;

/** Folds the WAL back into the main file so the database is one self-contained file. */
export function closeDatabase(sqlite: Database): void {
  sqlite.run("PRAGMA wal_checkpoint(TRUNCATE)");
  sqlite.close();
}

function wrap(sqlite: Database) {
  return drizzle({ client: sqlite, schema });
}

/**
 * Opens SQLite with the pragmas every connection needs, then brings the schema up to date.
 * WAL lets the CLI and the server share the file; synchronous=FULL (the default) makes an
 * acknowledged write survive power loss.
 */
export function openDatabase({ path, synchronous, migrationsFolder = MIGRATIONS_FOLDER }: DatabaseOptions) {
  const sqlite = new Database(path, { create: true, strict: true });
  try {
    sqlite.run("PRAGMA busy_timeout = 5000");
    if (path !== ":memory:") sqlite.run("PRAGMA journal_mode = WAL");
    sqlite.run(`PRAGMA synchronous = ${synchronous}`);
    sqlite.run("PRAGMA foreign_keys = ON");
    const db = wrap(sqlite);
    migrate(db, { migrationsFolder });
    // Fails now, with SQLITE_READONLY, rather than at the first write a client sends.
    sqlite.run("BEGIN IMMEDIATE");
    sqlite.run("ROLLBACK");
    return { sqlite, db };
  } catch (error) {
    sqlite.close();
    throw error;
  }
}
