const ENDPOINT = `id, url, created_at AS "createdAt", disabled_at IS NOT NULL AS disabled, events`;
const DELIVERY = `id, type, status, attempts, last_status AS "lastStatus", created_at AS "createdAt", next_attempt_at AS "nextAttemptAt"`;

const CURSOR = `w.id, w.owner_id AS "ownerId", w.change_cursor::float8 AS cursor, w.events`;

/** Claims and leases use the database's clock, which every instance shares. */
export const WEBHOOK_SQL = {
  /** (circuit failures, count): as on SQLite (sqlite/webhook-queries.ts). */
  behind: `SELECT ${CURSOR} FROM webhooks w
    WHERE w.disabled_at IS NULL
      AND (w.consecutive_failures < $1
        OR NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.next_attempt_at IS NOT NULL))
      AND EXISTS (SELECT 1 FROM plant_changes c WHERE c.owner_id = w.owner_id AND c.seq > w.change_cursor)
    ORDER BY w.id LIMIT $2`,
  behindOwner: `SELECT ${CURSOR} FROM webhooks w WHERE w.owner_id = $1 AND w.disabled_at IS NULL ORDER BY w.id`,
  /**
   * (endpoint, from, to, deliveries JSON): the cursor moved and the deliveries written in one
   * statement; another instance's fan-out of the same changes waits for the row, then finds it moved.
   */
  fanOut: `WITH moved AS (
      UPDATE webhooks SET change_cursor = $3 WHERE id = $1 AND change_cursor = $2 AND disabled_at IS NULL RETURNING id
    ), written AS (
      INSERT INTO webhook_deliveries (id, webhook_id, type, payload, created_at, next_attempt_at)
      SELECT d.value ->> 'id', moved.id, d.value ->> 'type', d.value ->> 'payload',
        to_timestamp((d.value ->> 'at')::float8 / 1000), now()
      FROM moved, json_array_elements($4::text::json) WITH ORDINALITY AS d
      ORDER BY d.ordinality
    )
    SELECT count(*)::int AS n FROM moved`,
  registerLock: "SELECT pg_advisory_xact_lock($1::int4, $2::int4)",
  countOwn: "SELECT count(*)::int AS n FROM webhooks WHERE owner_id = $1",
  /** Its cursor: the owner's newest change (those still in the inbox stamped first: changes.ts). */
  register: `INSERT INTO webhooks (owner_id, url, secret, created_at, events, change_cursor)
    VALUES ($1, $2, $3, $4, $5, (SELECT coalesce(max(seq), 0) FROM plant_changes WHERE owner_id = $1)) RETURNING ${ENDPOINT}`,
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
   * (circuit failures, rest ms, lease ms, count, per endpoint, busy JSON, held JSON): as on SQLite. Rows being
   * claimed are skipped: a run goes only as far as its head's rows could be locked, still unattempted and due.
   * Retries are locked apart from the first attempts picked beside them, so another instance's run is not held up.
   */
  claim: `WITH busy AS (SELECT key::int AS webhook_id, value::int AS n FROM json_each_text($6::text::json)),
    held AS (SELECT key::int AS webhook_id, value::int8 AS seq FROM json_each_text($7::text::json)),
    endpoints AS (
      SELECT * FROM (
        SELECT w.id, w.owner_id, coalesce(held.seq, 0) AS held,
          CASE WHEN w.consecutive_failures >= $1 THEN 1 ELSE $5 END - coalesce(busy.n, 0) AS room
        FROM webhooks w LEFT JOIN busy ON busy.webhook_id = w.id LEFT JOIN held ON held.webhook_id = w.id
        WHERE w.disabled_at IS NULL
          AND (w.consecutive_failures < $1 OR w.last_failed_at + $2::float8 * interval '1 millisecond' <= now())
      ) taking WHERE room > 0
    ),
    retries AS (
      SELECT e.id AS endpoint, e.owner_id, e.room, d.seq, d.next_attempt_at, false AS first
      FROM endpoints e CROSS JOIN LATERAL (
        SELECT seq, next_attempt_at, attempts FROM webhook_deliveries
        WHERE webhook_id = e.id AND next_attempt_at <= now() ORDER BY next_attempt_at, seq LIMIT $5
      ) d WHERE d.attempts > 0
    ),
    head AS (
      SELECT e.id AS endpoint, e.owner_id, e.room, h.seq, h.next_attempt_at,
        bool_or(h.next_attempt_at > now()) OVER (PARTITION BY e.id ORDER BY h.seq) AS blocked
      FROM endpoints e CROSS JOIN LATERAL (
        SELECT seq, next_attempt_at FROM webhook_deliveries
        WHERE webhook_id = e.id AND attempts = 0 AND next_attempt_at IS NOT NULL AND seq > e.held
        ORDER BY seq LIMIT e.room
      ) h
    ),
    locked AS (
      SELECT seq FROM webhook_deliveries
      WHERE seq IN (SELECT seq FROM head WHERE NOT blocked) AND attempts = 0 AND next_attempt_at <= now()
      FOR UPDATE SKIP LOCKED
    ),
    retried AS (
      SELECT seq FROM webhook_deliveries
      WHERE seq IN (SELECT seq FROM retries) AND attempts > 0 AND next_attempt_at <= now() FOR UPDATE SKIP LOCKED
    ),
    run AS (
      SELECT endpoint, owner_id, room, seq, next_attempt_at, true AS first FROM (
        SELECT h.*, bool_and(l.seq IS NOT NULL) OVER (PARTITION BY h.endpoint ORDER BY h.seq) AS ours
        FROM head h LEFT JOIN locked l USING (seq) WHERE NOT h.blocked
      ) taken WHERE ours
    ),
    due AS (
      SELECT seq, next_attempt_at, owner_id, room, row_number() OVER (
        PARTITION BY endpoint ORDER BY first, CASE WHEN NOT first THEN next_attempt_at END, seq
      ) AS turn
      FROM (SELECT * FROM retries WHERE seq IN (SELECT seq FROM retried) UNION ALL SELECT * FROM run) candidates
    ),
    fair AS (
      SELECT seq, next_attempt_at, row_number() OVER (PARTITION BY owner_id ORDER BY turn, next_attempt_at, seq) AS round
      FROM due WHERE turn <= room
    )
    UPDATE webhook_deliveries d SET next_attempt_at = now() + $3::float8 * interval '1 millisecond'
    FROM webhooks w
    WHERE w.id = d.webhook_id AND d.seq IN (SELECT seq FROM fair ORDER BY round, next_attempt_at, seq LIMIT $4)
    RETURNING d.seq, d.id, d.webhook_id AS "webhookId", d.payload, d.attempts, w.url, w.secret`,
  /** Their endpoints' rows, locked first as DELETE /webhooks locks them: a release never deadlocks with its cascade. */
  lockEndpointsOf: `SELECT id FROM webhooks WHERE id IN (
      SELECT webhook_id FROM webhook_deliveries WHERE seq = ANY(string_to_array($1::text, ',')::int8[])
    ) ORDER BY id FOR NO KEY UPDATE`,
  /** ($1: comma list of delivery seqs), after lockEndpointsOf: due again now; first attempts go by seq (claim). */
  release: `UPDATE webhook_deliveries SET next_attempt_at = now()
    WHERE seq = ANY(string_to_array($1::text, ',')::int8[]) AND status = 'pending'`,
  recordAttempt: `INSERT INTO webhook_attempts (delivery_seq, attempt, at, status_code, duration_ms, error, outcome, retry_in_ms)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE seq = $1)
    ON CONFLICT DO NOTHING`,
  pending: "SELECT count(*)::int AS n FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL",
  /** `= ANY(ARRAY(…))`: with `IN (…)` the generic plan scans the whole outbox, not knowing how small $2 is. */
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
