import type { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/bun-sqlite";
import * as schema from "./schema";

/**
 * Drizzle's view of a connection, in a module of its own so that client.ts can load it on first
 * use (a require of this file): its imports stay ES imports, the same Drizzle copy errors.ts's
 * instanceof checks see, where a require of "drizzle-orm/bun-sqlite" itself would load the
 * package's CommonJS build beside it.
 */
export const drizzleView = (sqlite: Database) => drizzle({ client: sqlite, schema });
