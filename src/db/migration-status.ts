import type { Migration } from "./migrations-macro";

/*
 * Apart from migrations-macro.ts, whose node:fs and drizzle-orm/migrator (node:crypto with it)
 * only the bundler needs: a start that loaded them took about 6 ms longer (a bytecode bundle of
 * that file against an empty one, `farm-bench -n 15 --vs 'bun empty.js' -- bun macro.js`: 13
 * against 6 ms).
 */

/** What a database's migration rows say against the migrations this version carries. */
export interface MigrationStatus {
  /** Rows recorded in the database. */
  applied: number;
  /** Migrations the next migrate would apply. */
  pending: Migration[];
  /** Anything else that disagrees between the database and the migrations, one line each. */
  problems: string[];
}

/**
 * Compares recorded rows (hash, created_at) with `migrations`, the same on every engine.
 * Drizzle applies every migration newer than the newest recorded one, so that is what
 * "pending" means here too.
 */
export function compareMigrations(
  recorded: Array<{ hash: string; createdAt: number }>,
  migrations: Migration[],
): MigrationStatus {
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
