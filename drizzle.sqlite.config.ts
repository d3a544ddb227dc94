import { defineConfig } from "drizzle-kit";

// `bun run db:generate` writes a migration for each engine; both folders are committed.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/sqlite/schema.ts",
  out: "./drizzle/sqlite",
});
