import type { Database } from "bun:sqlite";
import type { TablesRelationalConfig } from "drizzle-orm";
import type { BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { SQLiteSession, SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { readMigrations as embedMigrations } from "../migrations-macro" with { type: "macro" };
import { type Migration, readMigrations } from "../migrations-macro";

export type { Migration };

/** drizzle/sqlite as it was when this file was transpiled or bundled (see migrations-macro.ts). */
export const EMBEDDED_MIGRATIONS: Migration[] = embedMigrations("sqlite");

/** Reads a migrations folder at run time instead (a test's own migrations, for instance). */
export const migrationsFromFolder = (folder: string): Migration[] => readMigrations("sqlite", folder);

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

export interface MigrationStatus {
  /** Rows in `__drizzle_migrations`. */
  applied: number;
  /** Migrations the next migrate would apply. */
  pending: Migration[];
  /** Anything else that disagrees between the database and the migrations, one line each. */
  problems: string[];
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
  const newest = recorded.reduce((max, row) => Math.max(max, row.createdAt), Number.NEGATIVE_INFINITY);

  const pending: Migration[] = [];
  const problems: string[] = [];
  for (const migration of migrations) {
    const row = recorded.find((candidate) => candidate.createdAt === migration.folderMillis);
    if (!row) {
      if (migration.folderMillis > newest) pending.push(migration);
      else problems.push(`migration ${migration.tag} was never applied, and is older than the newest applied one`);
    } else if (row.hash !== migration.hash) {
      problems.push(`migration ${migration.tag} was applied from different SQL (its hash differs)`);
    }
  }
  const known = new Set(migrations.map((migration) => migration.folderMillis));
  for (const row of recorded) {
    if (!known.has(row.createdAt)) {
      problems.push(`the database records a migration this version does not know (created_at ${row.createdAt})`);
    }
  }
  return { applied: recorded.length, pending, problems };
}
