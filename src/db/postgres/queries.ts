import { getTableColumns } from "drizzle-orm";
import type { PlantFilter } from "../../core/stores";
import { plants } from "./schema";

/*
 * Every statement the PostgreSQL engine runs, as SQL text, run with `client.unsafe(text, params)`
 * (the webhook outbox's in webhook-queries.ts).
 * Rows come back as objects keyed by the names selected; Bun's driver gives int8 as decimal text.
 * Grouped statements take their group as one JSON array sent as text (`$1::text::json`): given a
 * string for a json parameter, the driver would encode it once more, as a JSON string.
 */

/** A plant's columns as the schema declares them (the owner aside), each read under its field's name. */
export const PLANT_FIELDS = Object.entries(getTableColumns(plants))
  .filter(([field]) => field !== "ownerId")
  .map(([field, column]) => ({ field, column: column.name, int64: column.dataType === "bigint" }));
const SELECT_PLANT = PLANT_FIELDS.map(({ field, column }) =>
  field === column ? `"${column}"` : `"${column}" AS "${field}"`,
).join(", ");
const PLANT_COLUMNS = ["owner_id", ...PLANT_FIELDS.map(({ column }) => column)].map((c) => `"${c}"`).join(", ");

/** An update's SET: each field is set only when its flag is ($3 for the name, $5 for the tag). */
const SET_CHANGE =
  "name = CASE WHEN $3::boolean THEN $4::text ELSE name END, tag = CASE WHEN $5::boolean THEN $6::text ELSE tag END";

/** The owner's plants matching `filter`, by id, as `columns`; binds owner, tag, cursor, row count in that order. */
export function listSql({ tag, after }: PlantFilter, columns: string): string {
  const where = ["owner_id = $1"];
  if (tag !== undefined) where.push(`tag = $${where.length + 1}`);
  if (after !== undefined) where.push(`id > $${where.length + 1}`);
  return `SELECT ${columns} FROM plants WHERE ${where.join(" AND ")} ORDER BY id LIMIT $${where.length + 1}`;
}

export const PLANT_SQL = {
  ids: (filter: PlantFilter) => listSql(filter, '"id"'),
  page: (filter: PlantFilter) => listSql(filter, SELECT_PLANT),
  get: `SELECT ${SELECT_PLANT} FROM plants WHERE owner_id = $1 AND id = $2`,
  /**
   * A group of creates, keys = column names, in arrival order (so the outbox, filled by a
   * trigger per row, keeps it); a taken (owner, id) is skipped.
   */
  insertGroup: `INSERT INTO plants (${PLANT_COLUMNS})
    SELECT ${PLANT_COLUMNS} FROM json_populate_recordset(null::plants, $1::text::json) WITH ORDINALITY
    ORDER BY ordinality
    ON CONFLICT DO NOTHING
    RETURNING owner_id AS "ownerId", ${SELECT_PLANT}`,
  /**
   * A group of deletes; a plant another session holds locked is skipped, not waited for (its
   * delete is sent again alone, `deleteOne`, so it waits by itself).
   */
  deleteGroup: `DELETE FROM plants USING (
      SELECT p.owner_id, p.id FROM plants p
      JOIN json_to_recordset($1::text::json) AS q(o integer, i bigint) ON p.owner_id = q.o AND p.id = q.i
      FOR UPDATE OF p SKIP LOCKED
    ) AS free
    WHERE plants.owner_id = free.owner_id AND plants.id = free.id
    RETURNING plants.owner_id::text || ':' || plants.id::text AS key`,
  deleteOne: "DELETE FROM plants WHERE owner_id = $1 AND id = $2 RETURNING 1",
  /** (owner, id, expected name, expected tag): only while the plant is still the one expected. */
  deleteIf: `DELETE FROM plants WHERE owner_id = $1 AND id = $2 AND name = $3::text
    AND tag IS NOT DISTINCT FROM $4::text RETURNING 1`,
  /** (owner, id, set name?, name, set tag?, tag). */
  update: `UPDATE plants SET ${SET_CHANGE} WHERE owner_id = $1 AND id = $2 RETURNING ${SELECT_PLANT}`,
  /**
   * As `update`, then (expected name, expected tag). A write racing on the same row waits for
   * the other's commit and then checks the row as it is now, so only one of them matches.
   */
  updateIf: `UPDATE plants SET ${SET_CHANGE} WHERE owner_id = $1 AND id = $2
    AND name = $7::text AND tag IS NOT DISTINCT FROM $8::text RETURNING ${SELECT_PLANT}`,
};

/** Times are bound as ISO 8601 text and read back as Dates. */
export const TOKEN_SQL = {
  /** A comma list of hashes (hex) → the active tokens among them. */
  findActive: `SELECT hash, id AS "tokenId", user_id AS "userId", last_used_at AS "lastUsedAt" FROM tokens
    WHERE hash = ANY(string_to_array($1::text, ',')) AND revoked_at IS NULL`,
  touch: "UPDATE tokens SET last_used_at = $1::timestamptz WHERE id = $2",
  anyToken: "SELECT id FROM tokens LIMIT 1",
  bootstrapLock: "SELECT pg_advisory_xact_lock($1::int8)",
  insertUser: "INSERT INTO users (name, created_at) VALUES ($1, $2::timestamptz) ON CONFLICT DO NOTHING",
  userByName: "SELECT id FROM users WHERE name = $1",
  insertToken: "INSERT INTO tokens (user_id, hash, created_at) VALUES ($1, $2, $3::timestamptz) RETURNING id",
  list: `SELECT t.id, u.name AS user, t.created_at AS "createdAt", t.last_used_at AS "lastUsedAt", t.revoked_at AS "revokedAt"
    FROM tokens t JOIN users u ON u.id = t.user_id ORDER BY t.id`,
  revoke: "UPDATE tokens SET revoked_at = $1::timestamptz WHERE id = $2 AND revoked_at IS NULL RETURNING id",
  exists: "SELECT id FROM tokens WHERE id = $1",
};

/**
 * The per-token token buckets, one row a key. `lease` takes up to n from each bucket asked for,
 * ($1 keys, $2 n for each, as comma lists; $3 perMinute, $4 now ms, $5 refill per ms) and answers
 * each key's `granted` and the `tokens` left. A row is read with FOR UPDATE, in key order (no
 * deadlock between instances asking for the same keys), so a concurrent take by another instance
 * is waited for and counted, never lost; a bucket with nothing to give is not written. A key with
 * no row gets one, already taken from; a key whose row another instance created meanwhile is not
 * answered (ON CONFLICT DO NOTHING), and is asked for again.
 */
const ASKED_KEYS = "string_to_array($1::text, ',')::int8[]";
export const RATE_LIMIT_SQL = {
  lease: `WITH asked AS (
      SELECT key, n FROM unnest(${ASKED_KEYS}, string_to_array($2::text, ',')::int4[]) AS asked(key, n)
    ),
    held AS (SELECT key, tokens, updated_at FROM rate_limits WHERE key = ANY(${ASKED_KEYS}) ORDER BY key FOR UPDATE),
    taken AS (
      SELECT held.key, bucket.refilled, LEAST(asked.n, floor(bucket.refilled))::int AS granted,
        GREATEST(held.updated_at, $4::float8) AS updated_at
      FROM held JOIN asked USING (key),
        LATERAL (SELECT LEAST($3::float8, held.tokens + GREATEST(0, $4::float8 - held.updated_at) * $5::float8) AS refilled) AS bucket
    ),
    spent AS (
      UPDATE rate_limits SET tokens = taken.refilled - taken.granted, updated_at = taken.updated_at
      FROM taken WHERE rate_limits.key = taken.key AND taken.granted > 0
    ),
    fresh AS (
      INSERT INTO rate_limits (key, tokens, updated_at)
      SELECT key, $3::float8 - LEAST(n, $3::float8), $4::float8 FROM asked WHERE key NOT IN (SELECT key FROM held)
      ON CONFLICT (key) DO NOTHING
      RETURNING key, tokens
    )
    SELECT key::float8 AS key, granted, refilled - granted AS tokens FROM taken
    UNION ALL SELECT key::float8, ($3::float8 - tokens)::int, tokens FROM fresh`,
};

export const STATUS_SQL = {
  ping: "SELECT 1",
  databaseBytes: "SELECT pg_database_size(current_database())::float8 AS bytes",
  /**
   * Needs about as much free disk as a write and changes nothing: a sort too big for its
   * work_mem spills about 280 kB to a temporary file (in the database's tablespace unless
   * temp_tablespaces says otherwise), and fails with 53100 where there is no room for it.
   */
  room: "SET LOCAL work_mem = '64kB'; SELECT count(*) FROM (SELECT g FROM generate_series(1, 20000) g ORDER BY g DESC OFFSET 0) s",
};

/** Drizzle's migrator keeps its rows in drizzle.__drizzle_migrations; `migrate` (client.ts) reads them there. */
export const MIGRATION_SQL = {
  tableExists: "SELECT to_regclass($1) IS NOT NULL AS exists",
  recorded: 'SELECT hash, created_at::float8 AS "createdAt" FROM drizzle.__drizzle_migrations',
  lock: "SELECT pg_advisory_lock($1::int8)",
  unlock: "SELECT pg_advisory_unlock($1::int8)",
};
