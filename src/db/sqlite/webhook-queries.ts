// Bound values in a WHERE or LIMIT are written `(?n + 0)` or `(?n || '')`, as queries.ts says why.

const ENDPOINT = "id, url, created_at AS createdAt, disabled_at IS NOT NULL AS disabled, events";
const DELIVERY =
  "id, type, status, attempts, last_status AS lastStatus, created_at AS createdAt, next_attempt_at AS nextAttemptAt";
const CURSOR = "w.id, w.owner_id AS ownerId, w.change_cursor AS cursor, w.events";

/** Endpoints `w` taking attempts now (?1 now, ?2 the circuit's failures, ?3 its rest): enabled, not resting. */
const TAKING = "w.disabled_at IS NULL AND (w.consecutive_failures < (?2 + 0) OR w.last_failed_at + ?3 <= (?1 + 0))";

// The pending count's steps: within a (webhook_id, next_attempt_at) group by seq, then past it; a row value of all
// three seeks on the first two only, so a large group was read again at every step (decision 0006).
const POSITION_SQL = "SELECT webhook_id AS endpoint, next_attempt_at AS at, seq FROM webhook_deliveries";
const IN_GROUP =
  "WHERE webhook_id = (?1 + 0) AND next_attempt_at = (?2 + 0) AND next_attempt_at IS NOT NULL AND seq > (?3 + 0)";
const PAST_GROUP = "WHERE next_attempt_at IS NOT NULL AND (webhook_id, next_attempt_at) > ((?1 + 0), (?2 + 0))";

// A trigger (drizzle/sqlite/0003, 0005) applies an attempt to its delivery.
export const WEBHOOK_SQL = {
  /** (circuit failures, count): endpoints with changes to fan out, none resting with deliveries pending. */
  behind: `SELECT ${CURSOR} FROM webhooks w
    WHERE w.disabled_at IS NULL
      AND (w.consecutive_failures < (?1 + 0)
        OR NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.next_attempt_at IS NOT NULL))
      AND EXISTS (SELECT 1 FROM plant_changes c WHERE c.owner_id = w.owner_id AND c.seq > w.change_cursor)
    ORDER BY w.id LIMIT (?2 + 0)`,
  /** (owner): its enabled endpoints, as its log is read. */
  behindOwner: `SELECT ${CURSOR} FROM webhooks w WHERE w.owner_id = ?1 AND w.disabled_at IS NULL ORDER BY w.id`,
  /** (endpoint, from, to): then fanOutInsert in the same savepoint, which writes only if this moved it. */
  fanOutCursor: `UPDATE webhooks SET change_cursor = ?3 WHERE id = ?1 AND change_cursor = ?2 AND disabled_at IS NULL
    RETURNING id`,
  /** (endpoint, deliveries JSON: [{id, type, at, payload}], now): in their order, all due now. */
  fanOutInsert: `INSERT INTO webhook_deliveries (id, webhook_id, type, payload, created_at, next_attempt_at)
    SELECT value ->> 'id', ?1, value ->> 'type', value ->> 'payload', value ->> 'at', ?3
    FROM json_each(?2) WHERE changes() > 0 ORDER BY key`,
  listOwn: `SELECT ${ENDPOINT} FROM webhooks WHERE owner_id = ?1 ORDER BY id`,
  ownEndpoint: "SELECT id FROM webhooks WHERE owner_id = ?1 AND id = ?2",
  /** The count and the insert are one statement: one writer at a time, so the cap holds. Its cursor: the owner's newest change. */
  register: `INSERT INTO webhooks (owner_id, url, secret, created_at, events, change_cursor)
    SELECT ?1, ?2, ?3, ?4, ?6, (SELECT coalesce(max(seq), 0) FROM plant_changes WHERE owner_id = ?1)
    WHERE (SELECT count(*) FROM webhooks WHERE owner_id = ?1) < ?5
    RETURNING ${ENDPOINT}`,
  remove: "DELETE FROM webhooks WHERE owner_id = ?1 AND id = ?2 RETURNING id",
  seqOf: "SELECT seq FROM webhook_deliveries WHERE webhook_id = ?1 AND id = ?2",
  page: `SELECT ${DELIVERY} FROM webhook_deliveries WHERE webhook_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3`,
  /** Most polls find nothing due: a read answers that without a write. */
  anyDue: `SELECT 1 AS due FROM webhooks w WHERE ${TAKING}
    AND EXISTS (SELECT 1 FROM webhook_deliveries WHERE webhook_id = w.id AND next_attempt_at <= (?1 + 0)) LIMIT 1`,
  /**
   * (now, circuit failures, rest ms, lease end, count, per endpoint, busy JSON, held JSON): each endpoint's oldest
   * due retries and the due start of its run of first attempts (its oldest unattempted after `held`, in seq order)
   * up to its room, then owner by owner in turn (core/webhooks.ts, ClaimRequest).
   */
  claim: `WITH busy AS (SELECT CAST(key AS INTEGER) AS webhook_id, value AS n FROM json_each(?7)),
    held AS (SELECT CAST(key AS INTEGER) AS webhook_id, value AS seq FROM json_each(?8)),
    endpoints AS (
      SELECT * FROM (
        SELECT w.id, w.owner_id, coalesce(held.seq, 0) AS held,
          CASE WHEN w.consecutive_failures >= ?2 THEN 1 ELSE ?6 END - coalesce(busy.n, 0) AS room
        FROM webhooks w LEFT JOIN busy ON busy.webhook_id = w.id LEFT JOIN held ON held.webhook_id = w.id WHERE ${TAKING}
      ) WHERE room > 0
    ),
    retries AS (
      SELECT e.id AS endpoint, e.owner_id, e.room, d.seq, d.next_attempt_at, 0 AS first
      FROM endpoints e JOIN webhook_deliveries d ON d.seq IN (
        SELECT seq FROM webhook_deliveries WHERE webhook_id = e.id AND next_attempt_at <= (?1 + 0)
        ORDER BY next_attempt_at, seq LIMIT (?6 + 0)
      ) WHERE d.attempts > 0
    ),
    head AS (
      SELECT e.id AS endpoint, e.owner_id, e.room, d.seq, d.next_attempt_at, max(d.next_attempt_at > (?1 + 0)) OVER (
        PARTITION BY e.id ORDER BY d.seq ROWS UNBOUNDED PRECEDING
      ) AS blocked
      FROM endpoints e JOIN webhook_deliveries d ON d.seq IN (
        SELECT seq FROM webhook_deliveries WHERE webhook_id = e.id AND attempts = 0 AND next_attempt_at IS NOT NULL
          AND seq > e.held ORDER BY seq LIMIT (?6 + 0)
      )
    ),
    run AS (SELECT endpoint, owner_id, room, seq, next_attempt_at, 1 AS first FROM head WHERE NOT blocked),
    due AS (
      SELECT seq, next_attempt_at, owner_id, room, row_number() OVER (
        PARTITION BY endpoint ORDER BY first, CASE WHEN first = 0 THEN next_attempt_at END, seq
      ) AS turn
      FROM (SELECT * FROM retries UNION ALL SELECT * FROM run)
    ),
    fair AS (
      SELECT seq, next_attempt_at, row_number() OVER (PARTITION BY owner_id ORDER BY turn, next_attempt_at, seq) AS round
      FROM due WHERE turn <= room
    )
    UPDATE webhook_deliveries SET next_attempt_at = ?4
    WHERE seq IN (SELECT seq FROM fair ORDER BY round, next_attempt_at, seq LIMIT (?5 + 0))
    RETURNING seq, id, webhook_id AS webhookId, payload, attempts`,
  endpointSecret: "SELECT url, secret FROM webhooks WHERE id = ?1",
  /** (now, JSON array of delivery seqs): due again now; first attempts go by seq whatever their due time (claim). */
  release: `UPDATE webhook_deliveries SET next_attempt_at = ?1
    WHERE seq IN (SELECT value FROM json_each(?2)) AND status = 'pending'`,
  /** A delivery gone with its endpoint records nothing, and a second record of one attempt is ignored. */
  recordAttempt: `INSERT INTO webhook_attempts (delivery_seq, attempt, at, status_code, duration_ms, error, outcome, retry_in_ms)
    SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE seq = ?1)
    ON CONFLICT DO NOTHING`,
  /** (endpoint, due, after seq, step - 1) */
  pendingStepInGroup: `${POSITION_SQL} ${IN_GROUP} ORDER BY seq LIMIT 1 OFFSET (?4 + 0)`,
  pendingRestInGroup: `SELECT count(*) AS n FROM webhook_deliveries ${IN_GROUP}`,
  /** (endpoint, due, step - 1) */
  pendingStepPast: `${POSITION_SQL} ${PAST_GROUP} ORDER BY webhook_id, next_attempt_at, seq LIMIT 1 OFFSET (?3 + 0)`,
  pendingRestPast: `SELECT count(*) AS n FROM webhook_deliveries ${PAST_GROUP}`,
  /** (created before, count): the oldest finished deliveries; attempts go by cascade. */
  pruneFinished: `DELETE FROM webhook_deliveries WHERE seq IN (
      SELECT seq FROM webhook_deliveries WHERE next_attempt_at IS NULL AND created_at < (?1 + 0)
      ORDER BY created_at LIMIT (?2 + 0)
    ) RETURNING seq`,
  endpointExists: "SELECT id FROM webhooks WHERE id = ?1",
  failed: `SELECT ${DELIVERY},
      (SELECT error FROM webhook_attempts a WHERE a.delivery_seq = d.seq ORDER BY attempt DESC LIMIT 1) AS lastError
    FROM webhook_deliveries d WHERE webhook_id = ?1 AND status = 'failed' ORDER BY seq`,
  redeliver: `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?1
    WHERE id = ?2 AND status = 'failed' AND (SELECT disabled_at FROM webhooks WHERE webhooks.id = webhook_id) IS NULL
    RETURNING status`,
  deliveryState: `SELECT d.status, w.disabled_at AS disabledAt FROM webhook_deliveries d
    JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = ?1`,
};
