import { readFileSync } from "node:fs";
import { readMigrationFiles } from "drizzle-orm/migrator";

/** Each engine's drizzle-kit output folder, committed with the code. */
export const migrationsFolderOf = (engine: "sqlite" | "postgres") =>
  new URL(`../../drizzle/${engine}`, import.meta.url).pathname;

/**
 * Reads a migrations folder exactly as Drizzle's folder-based migrator does (same SQL split,
 * same SHA-256 hashes, same timestamps) and adds each migration's tag for messages.
 *
 * Imported `with { type: "macro" }` and called with the engine's name, it runs when the
 * importing file is transpiled or bundled and its result is inlined: a compiled binary carries
 * its migrations and needs no drizzle/ folder beside it.
 */
export function readMigrations(engine: "sqlite" | "postgres", migrationsFolder = migrationsFolderOf(engine)) {
  const journal = JSON.parse(readFileSync(`${migrationsFolder}/meta/_journal.json`, "utf8")) as {
    entries: Array<{ tag: string }>;
  };
  return readMigrationFiles({ migrationsFolder }).map((migration, index) => ({
    ...migration,
    tag: journal.entries[index]?.tag ?? `#${index}`,
  }));
}

export type Migration = ReturnType<typeof readMigrations>[number];

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
