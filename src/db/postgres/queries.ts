import type { PlantFilter } from "../../core/stores";
import { plantFields } from "../plants";
import { plants } from "./schema";

// Run with `client.unsafe(text, params)`; int8 comes back as decimal text. A group is one JSON
// array sent as text (`$1::text::json`): the driver would encode a json parameter's string again.

export const { PLANT_FIELDS, VALUE_FIELDS } = plantFields(plants);
export const SELECT_PLANT = PLANT_FIELDS.map(({ field, column }) =>
  field === column ? `"${column}"` : `"${column}" AS "${field}"`,
).join(", ");
const PLANT_COLUMNS = ["owner_id", ...PLANT_FIELDS.map(({ column }) => column)].map((c) => `"${c}"`).join(", ");

/** Each field is set only when its flag is: $3 and $4 for the first, and so on. */
const SET_CHANGE = VALUE_FIELDS.map(
  ({ column, type }, i) =>
    `"${column}" = CASE WHEN $${3 + 2 * i}::boolean THEN $${4 + 2 * i}::${type} ELSE "${column}" END`,
).join(", ");
/** The change would leave the row as it is (each flag-and-value pair as SET_CHANGE binds them). */
const CHANGES_NOTHING = VALUE_FIELDS.map(
  ({ column, type }, i) =>
    `"${column}" IS NOT DISTINCT FROM CASE WHEN $${3 + 2 * i}::boolean THEN $${4 + 2 * i}::${type} ELSE "${column}" END`,
).join(" AND ");
/** The row still holds the values bound from $`first` on. */
const holds = (first: number) =>
  VALUE_FIELDS.map(({ column, type }, i) => `"${column}" IS NOT DISTINCT FROM $${first + i}::${type}`).join(" AND ");

/**
 * One row by its key, for each row of a group: LIMIT keeps the subquery a probe of the index, where a join would
 * be planned for a function's default 100 rows and scan a table of a few thousand rows to find two.
 */
const probe = (table: string, key: string, columns = "*") => `SELECT ${columns} FROM ${table} WHERE ${key} LIMIT 1`;

/** Binds owner, tag, cursor and row count, those the filter has, in that order. */
function listSql({ tag, after }: PlantFilter, columns: string): string {
  const where = ["owner_id = $1"];
  if (tag !== undefined) where.push(`tag = $${where.length + 1}`);
  if (after !== undefined) where.push(`id > $${where.length + 1}`);
  return `SELECT ${columns} FROM plants WHERE ${where.join(" AND ")} ORDER BY id LIMIT $${where.length + 1}`;
}

/** A plant's columns read under their fields' names, from `table` (a DELETE ... USING has two ids). */
const returningPlant = (table: string) =>
  `${table}.owner_id AS "ownerId", ${PLANT_FIELDS.map(({ field, column }) => `${table}."${column}" AS "${field}"`).join(", ")}`;
export const CHANGE_COLUMNS = PLANT_FIELDS.map(({ column }) => `"${column}"`).join(", ");
const FIELD_NAMES = PLANT_FIELDS.map(({ field }) => `"${field}"`).join(", ");
/**
 * The change log's part of a plant write: a change per row of `source` (a CTE returning `returningPlant`),
 * in its order, at the parameter `at` (ms); its seq is stamped after commit (changes.ts).
 */
const logged = (source: string, type: string, at: string, name = "logged") => `${name} AS (
      INSERT INTO plant_change_inbox (owner_id, type, at, ${CHANGE_COLUMNS})
      SELECT "ownerId", '${type}', to_timestamp(${at}::float8 / 1000), ${FIELD_NAMES} FROM ${source}
    )`;
/** The plants of `rows` in their order (a taken (owner, id) skipped), each change logged at $2. */
const inserted = (rows: string) => `inserted AS (
      INSERT INTO plants (${PLANT_COLUMNS}) SELECT ${PLANT_COLUMNS} FROM ${rows}
      ON CONFLICT DO NOTHING RETURNING ${returningPlant("plants")}
    ), ${logged("inserted", "plant.created", "$2")}`;
const AT_OF_DELETE_IF = `$${3 + VALUE_FIELDS.length}`;
/** An update that changes nothing writes nothing (and logs no change): the store tells it from a missing plant. */
const update = (also: string, at: number) => `WITH updated AS (
      UPDATE plants SET ${SET_CHANGE} WHERE owner_id = $1 AND id = $2 AND NOT (${CHANGES_NOTHING})${also}
      RETURNING ${returningPlant("plants")}
    ), ${logged("updated", "plant.updated", `$${at}`)} SELECT ${FIELD_NAMES} FROM updated`;

export const PLANT_SQL = {
  ids: (filter: PlantFilter) => listSql(filter, '"id"'),
  page: (filter: PlantFilter) => listSql(filter, SELECT_PLANT),
  get: `SELECT ${SELECT_PLANT} FROM plants WHERE owner_id = $1 AND id = $2`,
  /**
   * Creates ($1, in arrival order, which the change log keeps; a taken (owner, id) is skipped) and deletes ($3: a
   * locked plant is skipped, not waited for, and goes again alone: `deleteOne`) as one statement. $2: at.
   */
  writeGroup: `WITH ${inserted(`json_populate_recordset(null::plants, $1::text::json) WITH ORDINALITY
      ORDER BY ordinality`)},
    gone AS (
      DELETE FROM plants USING (
        SELECT p.owner_id, p.id FROM json_to_recordset($3::text::json) AS q(o integer, i bigint)
        CROSS JOIN LATERAL (${probe("plants", "owner_id = q.o AND id = q.i")} FOR UPDATE SKIP LOCKED) AS p
      ) AS free
      WHERE plants.owner_id = free.owner_id AND plants.id = free.id
      RETURNING ${returningPlant("plants")}
    ), ${logged("gone", "plant.deleted", "$2", "logged_gone")}
    SELECT false AS gone, * FROM inserted UNION ALL SELECT true, * FROM gone`,
  deleteOne: `WITH gone AS (DELETE FROM plants WHERE owner_id = $1 AND id = $2 RETURNING ${returningPlant("plants")}),
    ${logged("gone", "plant.deleted", "$3")} SELECT 1 FROM gone`,
  deleteIf: `WITH gone AS (
      DELETE FROM plants WHERE owner_id = $1 AND id = $2 AND ${holds(3)} RETURNING ${returningPlant("plants")}
    ), ${logged("gone", "plant.deleted", AT_OF_DELETE_IF)} SELECT 1 FROM gone`,
  update: update("", 3 + 2 * VALUE_FIELDS.length),
  /** A racing write waits for the other's commit and checks the row as it is then: one of them matches. */
  updateIf: update(` AND ${holds(3 + 2 * VALUE_FIELDS.length)}`, 3 + 3 * VALUE_FIELDS.length),
};

const TOKEN_FIELDS = `t.id, u.name AS user, t.name, t.scopes, t.created_at AS "createdAt", t.expires_at AS "expiresAt",
  t.last_used_at AS "lastUsedAt", t.revoked_at AS "revokedAt"`;
const TOKEN_COLUMNS = "user_id, hash, created_at, name, scopes, expires_at";

export const TOKEN_SQL = {
  /** $1: a comma list of hashes. */
  findActive: `SELECT t.* FROM unnest(string_to_array($1::text, ',')) AS h(hash) CROSS JOIN LATERAL (${probe(
    "tokens",
    "hash = h.hash AND revoked_at IS NULL",
    `hash, id AS "tokenId", user_id AS "userId", last_used_at AS "lastUsedAt", scopes, expires_at AS "expiresAt"`,
  )}) AS t`,
  touch: "UPDATE tokens SET last_used_at = $1::timestamptz WHERE id = $2",
  anyToken: "SELECT id FROM tokens LIMIT 1",
  bootstrapLock: "SELECT pg_advisory_xact_lock($1::int8)",
  insertUser: "INSERT INTO users (name, created_at) VALUES ($1, $2::timestamptz) ON CONFLICT DO NOTHING",
  userByName: "SELECT id FROM users WHERE name = $1",
  insertToken: `INSERT INTO tokens (${TOKEN_COLUMNS}) VALUES ($1, $2, $3::timestamptz, $4, $5, $6::timestamptz)
    RETURNING id`,
  /** Taken first, in createToken's transaction: two mints (on any instance) count one after the other. */
  lockUser: "SELECT id FROM users WHERE id = $1 FOR UPDATE",
  /** A statement of its own after lockUser, so its snapshot sees a mint that held the lock before. */
  createToken: `INSERT INTO tokens (${TOKEN_COLUMNS}) SELECT $1, $2, $3::timestamptz, $4, $5, $6::timestamptz
    WHERE (SELECT count(*) FROM tokens WHERE user_id = $1 AND revoked_at IS NULL) < $7 RETURNING id`,
  /** Every token, or user $1's, or only token $2. */
  list: `SELECT ${TOKEN_FIELDS} FROM tokens t JOIN users u ON u.id = t.user_id
    WHERE ($1::int IS NULL OR t.user_id = $1) AND ($2::int IS NULL OR t.id = $2) ORDER BY t.id`,
  revoke: `UPDATE tokens SET revoked_at = $1::timestamptz WHERE id = $2 AND revoked_at IS NULL
    AND ($3::int IS NULL OR user_id = $3) RETURNING id`,
  exists: "SELECT id FROM tokens WHERE id = $1 AND ($2::int IS NULL OR user_id = $2)",
  /** $1: a comma list of token ids. */
  valid: `SELECT id FROM tokens WHERE id = ANY(string_to_array($1::text, ',')::int[]) AND revoked_at IS NULL
    AND (expires_at IS NULL OR expires_at > $2::timestamptz)`,
};

export const IDEMPOTENCY_SQL = {
  /** Keyed creates and their kept answers in one statement: $1 as rowJson writes it, $2: at. One row per create,
   * in order; a record another session wrote meanwhile fails it with 23505 (write-groups.ts). */
  insertGroup: `WITH q AS (
      SELECT p.*, e.ordinality AS n, e.value->>'key' AS key, e.value->>'hash' AS hash,
        to_timestamp((e.value->>'at')::float8 / 1000) AS at,
        to_timestamp((e.value->>'expired_at')::float8 / 1000) AS expired_at,
        (e.value->>'cs')::int AS cs, e.value->>'cb' AS cb, e.value->>'ce' AS ce,
        (e.value->>'ts')::int AS ts, e.value->>'tb' AS tb
      FROM json_array_elements($1::text::json) WITH ORDINALITY AS e
      CROSS JOIN LATERAL json_populate_record(null::plants, e.value) AS p
    ),
    kept AS (
      SELECT q.n, k.request_hash, k.status, k.body, k.etag, k.created_at <= q.expired_at AS expired
      FROM q CROSS JOIN LATERAL (${probe("idempotency_keys", "owner_id = q.owner_id AND key = q.key")}) AS k
    ),
    ${inserted("q WHERE q.n NOT IN (SELECT n FROM kept) ORDER BY q.n")},
    recorded AS (
      INSERT INTO idempotency_keys (owner_id, key, request_hash, status, body, etag, created_at)
      SELECT q.owner_id, q.key, q.hash, CASE WHEN i.id IS NULL THEN q.ts ELSE q.cs END,
        CASE WHEN i.id IS NULL THEN q.tb ELSE q.cb END, CASE WHEN i.id IS NULL THEN NULL ELSE q.ce END, q.at
      FROM q LEFT JOIN inserted i ON i."ownerId" = q.owner_id AND i.id = q.id
      WHERE q.key IS NOT NULL AND q.n NOT IN (SELECT n FROM kept)
      RETURNING owner_id, key, request_hash, status, body, etag
    )
    SELECT i.*, r.key IS NOT NULL AS fresh, coalesce(r.request_hash, k.request_hash) AS "requestHash",
      coalesce(r.status, k.status) AS status, coalesce(r.body, k.body) AS body,
      CASE WHEN r.key IS NOT NULL THEN r.etag ELSE k.etag END AS etag, k.expired
    FROM q LEFT JOIN inserted i ON i."ownerId" = q.owner_id AND i.id = q.id
      LEFT JOIN recorded r ON r.owner_id = q.owner_id AND r.key = q.key
      LEFT JOIN kept k ON k.n = q.n
    ORDER BY q.n`,
  dropExpired: "DELETE FROM idempotency_keys WHERE owner_id = $1 AND key = $2 AND created_at <= $3::timestamptz",
  prune: `WITH gone AS (
      DELETE FROM idempotency_keys WHERE (owner_id, key) IN (
        SELECT owner_id, key FROM idempotency_keys WHERE created_at < $1::timestamptz
        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
      ) RETURNING 1
    )
    SELECT count(*)::int AS n FROM gone`,
};

export const STATUS_SQL = {
  ping: "SELECT 1",
  databaseBytes: "SELECT pg_database_size(current_database())::float8 AS bytes",
  /** Needs free disk like a write, changes nothing: the sort spills to a temporary file, or fails with 53100. */
  room: "SET LOCAL work_mem = '64kB'; SELECT count(*) FROM (SELECT g FROM generate_series(1, 20000) g ORDER BY g DESC OFFSET 0) s",
};

export const MIGRATION_SQL = {
  tableExists: "SELECT to_regclass($1) IS NOT NULL AS exists",
  recorded: 'SELECT hash, created_at::float8 AS "createdAt" FROM drizzle.__drizzle_migrations',
  lock: "SELECT pg_advisory_lock($1::int8)",
  unlock: "SELECT pg_advisory_unlock($1::int8)",
};
