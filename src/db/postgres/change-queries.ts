import { CHANGE_COLUMNS, SELECT_PLANT } from "./queries";

const SELECT_CHANGE = `SELECT seq::float8 AS seq, owner_id AS "ownerId", type,
  (extract(epoch FROM at) * 1000)::float8 AS at, ${SELECT_PLANT} FROM plant_changes`;

/** The change log; readers see stamped changes only, in seq order (docs/decisions/0010-change-log-order.md). */
export const CHANGE_SQL = {
  /** The owner's marks on every row (one row of nulls when the page is empty). */
  page: `SELECT m.*, c.* FROM (
      SELECT GREATEST(coalesce((SELECT max(seq) FROM plant_changes WHERE owner_id = $1), 0),
        u.changes_pruned_through)::float8 AS newest, u.changes_pruned_through::float8 AS "prunedThrough"
      FROM users u WHERE u.id = $1
    ) m LEFT JOIN LATERAL (${SELECT_CHANGE} WHERE owner_id = $1 AND seq > $2 ORDER BY seq LIMIT $3) c ON true`,
  all: `${SELECT_CHANGE} WHERE seq > $1 ORDER BY seq LIMIT $2`,
  newest: "SELECT coalesce(max(seq), 0)::float8 AS newest FROM plant_changes",
  /** Along the key, not a scan of a queue table full of dead rows. */
  oldestWaiting: "SELECT pos::text AS pos FROM plant_change_inbox ORDER BY pos LIMIT 1",
  stampLock: "SELECT pg_advisory_xact_lock($1::int8)",
  /**
   * Under stampLock, taken in a statement before this one, so this one's snapshot sees the last
   * stamp: up to $1 committed changes moved out of the inbox, numbered after the newest, in the order written.
   */
  stamp: `WITH moved AS (
      DELETE FROM plant_change_inbox WHERE pos = ANY(ARRAY(SELECT pos FROM plant_change_inbox ORDER BY pos LIMIT $1))
      RETURNING *
    ), base AS (SELECT coalesce(max(seq), 0) AS s FROM plant_changes)
    INSERT INTO plant_changes (seq, owner_id, type, at, ${CHANGE_COLUMNS})
    SELECT base.s + row_number() OVER (ORDER BY pos), owner_id, type, at, ${CHANGE_COLUMNS} FROM moved, base
    RETURNING 1`,
  /** As on SQLite (sqlite/queries.ts, PRUNABLE); their owners' marks moved past them. */
  prune: `WITH doomed AS (
      SELECT seq FROM plant_changes
      WHERE seq = ANY(ARRAY(SELECT seq FROM plant_changes ORDER BY seq LIMIT $2))
        AND at < $1::timestamptz AND seq < (SELECT max(seq) FROM plant_changes)
        AND NOT EXISTS (SELECT 1 FROM webhooks w
          WHERE w.owner_id = plant_changes.owner_id AND w.disabled_at IS NULL AND w.change_cursor < plant_changes.seq)
      FOR UPDATE SKIP LOCKED
    ), gone AS (
      DELETE FROM plant_changes c USING doomed WHERE c.seq = doomed.seq RETURNING c.owner_id, c.seq
    ), marked AS (
      UPDATE users u SET changes_pruned_through = GREATEST(u.changes_pruned_through, g.through)
      FROM (SELECT owner_id, max(seq) AS through FROM gone GROUP BY owner_id) g WHERE u.id = g.owner_id
    )
    SELECT count(*)::int AS n FROM gone`,
};
