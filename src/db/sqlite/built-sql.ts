import type { ReadSql } from "./list-query";
import { readSqlTexts, tokenSqlTexts, writeSqlTexts } from "./sql-texts" with { type: "macro" };
import type { TokenSql } from "./token-sql";
import type { WriteSql } from "./write-statements";

/** The plant store's reads, as Drizzle wrote them when this file was transpiled or bundled. */
export const READ_SQL: ReadSql = readSqlTexts();
/** Every write's SQL, the same way: the writer thread prepares these texts. */
export const WRITE_SQL: WriteSql = writeSqlTexts();
/** The token store's statements, the same way. */
export const TOKEN_SQL: TokenSql = tokenSqlTexts();
