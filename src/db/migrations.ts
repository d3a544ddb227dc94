import type { MigrationMeta } from "drizzle-orm/migrator";
import postgres from "../../drizzle/postgres/migrations.json";
import sqlite from "../../drizzle/sqlite/migrations.json";

/** As drizzle-kit wrote it and Drizzle's migrator applies it, with its name. */
export type Migration = MigrationMeta & { tag: string };

/** scripts/bundle-migrations.ts writes them from drizzle/<engine>. */
export const MIGRATIONS: Record<"sqlite" | "postgres", Migration[]> = { sqlite, postgres };

/** Drizzle's own migrator (`dialect` and `session` are its @internal), given bundled migrations rather than a folder. */
export function applyMigrations(db: object, migrations: Migration[]): unknown {
  type Internals = {
    dialect: { migrate(m: Migration[], session: unknown, config: object): unknown };
    session: unknown;
  };
  const { dialect, session } = db as Internals;
  return dialect.migrate(migrations, session, {});
}

/**
 * Drizzle applies every migration newer than the newest recorded one: that is "pending" here too;
 * `problems`: anything else that disagrees, one line each.
 */
export function compareMigrations(recorded: Array<{ hash: string; createdAt: number }>, migrations: Migration[]) {
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
