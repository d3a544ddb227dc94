import { getTableColumns } from "drizzle-orm";
import type { PlantFilter } from "../../core/stores";
import { plants } from "./schema";

/*
 * Every statement the PostgreSQL engine runs, as SQL text, run with `client.unsafe(text, params)`.
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

const ENDPOINT = `id, url, created_at AS "createdAt", disabled_at IS NOT NULL AS disabled`;
const DELIVERY = `id, status, attempts, last_status AS "lastStatus", created_at AS "createdAt", next_attempt_at AS "nextAttemptAt"`;

/**
 * Webhook endpoints and the outbox (the triggers are in drizzle/postgres/0003). Claims and leases
 * use the database's clock, which every instance shares.
 */
export const WEBHOOK_SQL = {
  /** Per owner, so the endpoint cap holds across instances. */
  registerLock: "SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
  countOwn: "SELECT count(*)::int AS n FROM webhooks WHERE owner_id = $1",
  register: `INSERT INTO webhooks (owner_id, url, secret, created_at) VALUES ($1, $2, $3, $4) RETURNING ${ENDPOINT}`,
  listOwn: `SELECT ${ENDPOINT} FROM webhooks WHERE owner_id = $1 ORDER BY id`,
  remove: "DELETE FROM webhooks WHERE owner_id = $1 AND id = $2 RETURNING id",
  /** (owner, endpoint, after or null, rows): whether the endpoint is the owner's, where `after` is, and the page. */
  page: `WITH endpoint AS (SELECT id FROM webhooks WHERE owner_id = $1 AND id = $2),
    start AS (
      SELECT CASE WHEN $3::text IS NULL THEN 0
        ELSE (SELECT seq FROM webhook_deliveries WHERE webhook_id = $2 AND id = $3::text) END AS seq
    )
    SELECT (SELECT count(*)::int FROM endpoint) AS found, start.seq IS NOT NULL AS started, d.*
    FROM start LEFT JOIN LATERAL (
      SELECT ${DELIVERY} FROM webhook_deliveries
      WHERE webhook_id = (SELECT id FROM endpoint) AND seq > start.seq ORDER BY seq LIMIT $4
    ) d ON true`,
  /**
   * (circuit failures, circuit rest ms, lease ms, count, per endpoint, busy as
   * {"<endpoint id>": attempts in flight}): as on SQLite (src/db/sqlite/queries.ts), each
   * endpoint's room, its oldest due deliveries up to it, then owner by owner in turn. Rows another
   * instance is claiming are skipped; a claimed row is not due again until its lease ends.
   */
  claim: `WITH busy AS (SELECT key::int AS webhook_id, value::int AS n FROM json_each_text($6::text::json)),
    endpoints AS (
      SELECT * FROM (
        SELECT w.id, w.owner_id, CASE WHEN w.consecutive_failures >= $1 THEN 1 ELSE $5 END - coalesce(busy.n, 0) AS room
        FROM webhooks w LEFT JOIN busy ON busy.webhook_id = w.id
        WHERE w.disabled_at IS NULL
          AND (w.consecutive_failures < $1 OR w.last_failed_at + $2::float8 * interval '1 millisecond' <= now())
      ) taking WHERE room > 0
    ),
    due AS (
      SELECT d.seq, d.next_attempt_at, e.owner_id,
        row_number() OVER (PARTITION BY e.id ORDER BY d.next_attempt_at, d.seq) AS turn
      FROM endpoints e CROSS JOIN LATERAL (
        SELECT seq, next_attempt_at FROM webhook_deliveries
        WHERE webhook_id = e.id AND next_attempt_at <= now()
        ORDER BY next_attempt_at LIMIT e.room FOR UPDATE SKIP LOCKED
      ) d
    ),
    fair AS (
      SELECT seq, next_attempt_at, row_number() OVER (PARTITION BY owner_id ORDER BY turn, next_attempt_at, seq) AS round
      FROM due
    )
    UPDATE webhook_deliveries d SET next_attempt_at = now() + $3::float8 * interval '1 millisecond'
    FROM webhooks w
    WHERE w.id = d.webhook_id AND d.seq IN (SELECT seq FROM fair ORDER BY round, next_attempt_at, seq LIMIT $4)
    RETURNING d.seq, d.id, d.webhook_id AS "webhookId", d.payload, d.attempts, w.url, w.secret`,
  /** A delivery gone with its endpoint records nothing, and a second record of one attempt is ignored. */
  recordAttempt: `INSERT INTO webhook_attempts (delivery_seq, attempt, at, status_code, duration_ms, error, outcome, retry_in_ms)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE seq = $1)
    ON CONFLICT DO NOTHING`,
  pending: "SELECT count(*)::int AS n FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL",
  /**
   * (created before, count): the oldest finished deliveries no other instance is removing;
   * attempts go by cascade. `= ANY(ARRAY(…))` keeps the generic plan to key lookups: with
   * `IN (…)` it joined a scan of the whole outbox, not knowing how small `$2` is.
   */
  pruneFinished: `WITH gone AS (
      DELETE FROM webhook_deliveries WHERE seq = ANY(ARRAY(
        SELECT seq FROM webhook_deliveries WHERE next_attempt_at IS NULL AND created_at < $1
        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED
      )) RETURNING 1
    )
    SELECT count(*)::int AS n FROM gone`,
  endpointExists: "SELECT id FROM webhooks WHERE id = $1",
  failed: `SELECT ${DELIVERY},
      (SELECT error FROM webhook_attempts a WHERE a.delivery_seq = d.seq ORDER BY attempt DESC LIMIT 1) AS "lastError"
    FROM webhook_deliveries d WHERE d.webhook_id = $1 AND d.status = 'failed' ORDER BY d.seq`,
  redeliver: `WITH target AS (
      SELECT d.seq, d.status, w.disabled_at FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
      WHERE d.id = $1
    ), queued AS (
      UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now()
      WHERE seq = (SELECT seq FROM target WHERE status = 'failed' AND disabled_at IS NULL)
      RETURNING seq
    )
    SELECT target.disabled_at IS NOT NULL AS disabled, (SELECT count(*)::int FROM queued) AS queued FROM target`,
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
