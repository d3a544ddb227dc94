import type { Database } from "bun:sqlite";
import type { TablesRelationalConfig } from "drizzle-orm";
import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { SQLiteSession, SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { compareMigrations, MIGRATIONS, type Migration, type MigrationStatus } from "../migrations";

export type { Migration, MigrationStatus };

/** drizzle/sqlite as scripts/bundle-migrations.ts bundled it. */
export const EMBEDDED_MIGRATIONS: Migration[] = MIGRATIONS.sqlite;

/** Drizzle's default, which `applyMigrations` keeps. */
export const MIGRATIONS_TABLE = "__drizzle_migrations";

/** What `db.dialect` and `db.session` are at run time; Drizzle marks both @internal. */
interface DrizzleInternals {
  dialect: SQLiteSyncDialect;
  session: SQLiteSession<"sync", unknown, Record<string, unknown>, TablesRelationalConfig>;
}

/**
 * Applies what is pending with Drizzle's own migrator (the one behind
 * `drizzle-orm/bun-sqlite/migrator`, given migrations rather than a folder): one transaction,
 * the same `__drizzle_migrations` rows, so databases migrated either way agree.
 */
export function applyMigrations<TSchema extends Record<string, unknown>>(
  db: BunSQLiteDatabase<TSchema>,
  migrations: Migration[],
): void {
  const { dialect, session } = db as unknown as DrizzleInternals;
  dialect.migrate(migrations, session);
}

/**
 * Compares the database with `migrations` without changing either. Drizzle applies every
 * migration newer than the newest recorded one, so that is what "pending" means here too.
 */
export function migrationStatus(sqlite: Database, migrations: Migration[]): MigrationStatus {
  const hasTable = sqlite
    .query("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?")
    .get(MIGRATIONS_TABLE);
  const recorded = hasTable
    ? sqlite
        .query<{ hash: string; createdAt: number | string | null }, []>(
          `SELECT hash, created_at AS createdAt FROM ${MIGRATIONS_TABLE}`,
        )
        .all()
        .map((row) => ({ hash: row.hash, createdAt: Number(row.createdAt) }))
    : [];
  return compareMigrations(recorded, migrations);
}
