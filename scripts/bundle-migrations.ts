/**
 * Writes drizzle/<engine>/migrations.json from drizzle-kit's output folder: every migration as
 * Drizzle's folder migrator reads it (same SQL split, hashes and timestamps) with its tag. The
 * service imports the JSON, so a start (and the single executable) needs no drizzle/ folder.
 * `bun run db:generate` runs it after drizzle-kit; tests/unit/migrations.test.ts checks it is current.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { readMigrationFiles } from "drizzle-orm/migrator";

export const ENGINES = ["sqlite", "postgres"] as const;
export const migrationsFolderOf = (engine: (typeof ENGINES)[number]) =>
  new URL(`../drizzle/${engine}`, import.meta.url).pathname;

export function readMigrations(engine: (typeof ENGINES)[number]) {
  const migrationsFolder = migrationsFolderOf(engine);
  const journal = JSON.parse(readFileSync(`${migrationsFolder}/meta/_journal.json`, "utf8")) as {
    entries: Array<{ tag: string }>;
  };
  return readMigrationFiles({ migrationsFolder }).map((migration, index) => ({
    ...migration,
    tag: journal.entries[index]?.tag ?? `#${index}`,
  }));
}

export const bundlePathOf = (engine: (typeof ENGINES)[number]) => `${migrationsFolderOf(engine)}/migrations.json`;

if (import.meta.main) {
  for (const engine of ENGINES) {
    writeFileSync(bundlePathOf(engine), `${JSON.stringify(readMigrations(engine), null, 1)}\n`);
    console.log(`wrote ${bundlePathOf(engine)}`);
  }
}
