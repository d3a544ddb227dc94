/**
 * The SQL Drizzle writes from the schema for the SQLite stores, as text. Imported
 * `with { type: "macro" }`, these run when the importing file is transpiled or bundled and
 * their result is inlined, so a start runs no query builder: building the eight list
 * statements and the writes with Drizzle took about 5 ms of every start (marks in
 * src/index.ts, `bun run start`, 2026-11-23), and the token lookup's 1.6 ms more (a CPU profile
 * of a bundled start, `bun --cpu-prof --cpu-prof-interval=100`, ten starts).
 */
import { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { readSql } from "./list-query";
import * as schema from "./schema";
import { tokenSql } from "./token-sql";
import { writeSql } from "./write-sql";

const renderer = () => drizzle({ client: new Database(":memory:"), schema });

export const readSqlTexts = () => readSql(renderer());
export const writeSqlTexts = () => writeSql(renderer());
export const tokenSqlTexts = () => tokenSql(renderer());
