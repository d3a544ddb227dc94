import type { Database } from "bun:sqlite";
import { compareMigrations, MIGRATIONS, type Migration } from "../migrations";

export const EMBEDDED_MIGRATIONS: Migration[] = MIGRATIONS.sqlite;

export const MIGRATIONS_TABLE = "__drizzle_migrations";

export function migrationStatus(sqlite: Database, migrations: Migration[]) {
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
