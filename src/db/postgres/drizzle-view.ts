import type { SQL } from "bun";
import { drizzle } from "drizzle-orm/bun-sql";
import * as schema from "./schema";

/**
 * Drizzle's view of a PostgreSQL connection, in a module of its own so that client.ts loads it
 * only to migrate (a require of this file), as SQLite's drizzle-view.ts is loaded: its imports
 * stay ES imports, the same Drizzle copy errors.ts's instanceof checks see.
 */
export const drizzleView = (client: SQL) => drizzle({ client, schema });
