import { describe, expect, test } from "bun:test";
import { ENGINES, readMigrations } from "../../scripts/bundle-migrations";
import { MIGRATIONS } from "../../src/db/migrations";

describe("the migrations the service carries", () => {
  for (const engine of ENGINES) {
    test(`${engine}: drizzle/${engine}/migrations.json is drizzle-kit's folder as Drizzle reads it (bun run db:generate)`, () => {
      expect(MIGRATIONS[engine]).toEqual(readMigrations(engine));
    });
  }
});
