import { PLANT_FIELDS } from "./queries";

const COLUMNS = ["owner_id", ...PLANT_FIELDS.map(({ column }) => column)].map((c) => `"${c}"`).join(", ");
const RETURNED = PLANT_FIELDS.map(({ field, column }) => `"${column}" AS "${field}"`).join(", ");

export const IDEMPOTENCY_SQL = {
  /**
   * A group holding a keyed create, so the plant and its kept answer commit together. $1: each
   * create's columns and, keyed, `key`, `hash`, `at`, `expired_at` (ms) and the answers created
   * (`cs`/`cb`/`ce`: status, body, ETag) and taken (`ts`/`tb`). A record another session wrote
   * meanwhile fails it with 23505 (group-insert.ts). One row per create, in order.
   */
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
      FROM q JOIN idempotency_keys k ON k.owner_id = q.owner_id AND k.key = q.key
    ),
    inserted AS (
      INSERT INTO plants (${COLUMNS})
      SELECT ${COLUMNS} FROM q WHERE q.n NOT IN (SELECT n FROM kept) ORDER BY q.n
      ON CONFLICT DO NOTHING
      RETURNING owner_id AS "ownerId", ${RETURNED}
    ),
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
