/**
 * The PostgreSQL stores' SQL as text, imported `with { type: "macro" }` (built-sql.ts): this runs
 * when the importing file is transpiled or bundled and its result is inlined, as SQLite's
 * sql-texts.ts does. A start then loads neither Drizzle's pg-core nor its driver: building these
 * statements and Drizzle's view of the pool took 5-8 ms of every PostgreSQL start (marks in
 * src/index.ts, `bun run start`, 2026-11-26).
 */
import { drizzle } from "drizzle-orm/bun-sql";
import { postgresSql } from "./statements";

export const postgresSqlTexts = () => postgresSql(drizzle.mock());
