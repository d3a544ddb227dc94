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
