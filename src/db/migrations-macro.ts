import { readFileSync } from "node:fs";
import { readMigrationFiles } from "drizzle-orm/migrator";

/** The drizzle-kit output folder, committed with the code. */
export const MIGRATIONS_FOLDER = new URL("../../drizzle", import.meta.url).pathname;

/**
 * Reads drizzle/ exactly as Drizzle's folder-based migrator does (same SQL split, same
 * SHA-256 hashes, same timestamps) and adds each migration's tag for messages.
 *
 * Imported `with { type: "macro" }`, it runs when the importing file is transpiled or bundled
 * and its result is inlined: a compiled binary carries its migrations and needs no drizzle/
 * folder beside it.
 */
export function readMigrations(migrationsFolder: string = MIGRATIONS_FOLDER) {
  const journal = JSON.parse(readFileSync(`${migrationsFolder}/meta/_journal.json`, "utf8")) as {
    entries: Array<{ tag: string }>;
  };
  return readMigrationFiles({ migrationsFolder }).map((migration, index) => ({
    ...migration,
    tag: journal.entries[index]?.tag ?? `#${index}`,
  }));
}
