/**
 * A webhook endpoint's columns as the store reads them, in their own file: write-sql.ts, which
 * writes them into a RETURNING too, loads Drizzle and runs only when the code is bundled.
 */
export const ENDPOINT_COLUMNS = "id, url, created_at AS createdAt, disabled_at AS disabledAt";
