import { defineConfig } from "drizzle-kit";

// `bun run db:generate` writes a migration for each engine; both folders are committed.
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/postgres/schema.ts",
  out: "./drizzle/postgres",
});
