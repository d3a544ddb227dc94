import { postgresSqlTexts } from "./sql-texts" with { type: "macro" };
import type { PostgresSql } from "./statements";

/** The PostgreSQL stores' statements, as Drizzle wrote them when this file was transpiled or bundled. */
export const POSTGRES_SQL: PostgresSql = postgresSqlTexts();
