import type { Database } from "bun:sqlite";
import type { TablesRelationalConfig } from "drizzle-orm";
import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { SQLiteSession, SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { compareMigrations, MIGRATIONS, type Migration, type MigrationStatus } from "../migrations";

export const EMBEDDED_MIGRATIONS: Migration[] = MIGRATIONS.sqlite;

export const MIGRATIONS_TABLE = "__drizzle_migrations";

/** What `db.dialect` and `db.session` are at run time; Drizzle marks both @internal. */
interface DrizzleInternals {
  dialect: SQLiteSyncDialect;
  session: SQLiteSession<"sync", unknown, Record<string, unknown>, TablesRelationalConfig>;
}

/** Drizzle's own migrator, given bundled migrations rather than a folder: the same rows either way. */
export function applyMigrations<TSchema extends Record<string, unknown>>(
  db: BunSQLiteDatabase<TSchema>,
  migrations: Migration[],
): void {
  const { dialect, session } = db as unknown as DrizzleInternals;
  dialect.migrate(migrations, session);
}

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
