import type { PlantFilter } from "../../core/stores";
import { plantFields } from "../plants";
import { plants } from "./schema";

/*
 * A bound value in a WHERE or LIMIT is written `(?n + 0)` or `(?n || '')`: alone, it makes SQLite
 * re-prepare the statement on every run (docs/decisions/0004-sqlite-bound-expressions.md).
 */

export const { PLANT_FIELDS, VALUE_FIELDS } = plantFields(plants);
const PLANT_COLUMNS = PLANT_FIELDS.map(({ field, column }) => (field === column ? column : `${column} AS "${field}"`));
const SELECT_PLANT = PLANT_COLUMNS.join(", ");

/** Each field is set only when its flag is: ?3 and ?4 for the first, and so on. */
const SET_CHANGE = VALUE_FIELDS.map(
  ({ column }, i) => `${column} = CASE WHEN ?${3 + 2 * i} THEN ?${4 + 2 * i} ELSE ${column} END`,
).join(", ");
/** The change would leave the row as it is (each flag-and-value pair as SET_CHANGE binds them). */
const CHANGES_NOTHING = VALUE_FIELDS.map(
  ({ column }, i) => `${column} IS CASE WHEN ?${3 + 2 * i} THEN ?${4 + 2 * i} ELSE ${column} END`,
).join(" AND ");
/** The row still holds the values bound from ?`first` on. */
const holds = (first: number) => VALUE_FIELDS.map(({ column }, i) => `${column} IS ?${first + i}`).join(" AND ");
/** An update that changes nothing writes nothing (and logs no change): the store tells it from a missing plant. */
const UPDATE = `UPDATE plants SET ${SET_CHANGE} WHERE owner_id = ?1 AND id = ?2 AND NOT (${CHANGES_NOTHING})`;

/** Binds the owner, tag, cursor and row count, whichever the filter's shape uses. */
export function listSql({ tag, after }: PlantFilter, idsOnly: boolean): string {
  const where = ["owner_id = (?1 + 0)"];
  if (tag !== undefined) where.push("tag = (?2 || '')");
  if (after !== undefined) where.push("id > (?3 + 0)");
  return `SELECT ${idsOnly ? "id" : SELECT_PLANT} FROM plants WHERE ${where.join(" AND ")} ORDER BY id LIMIT (?4 + 0)`;
}

export const PLANT_SQL = {
  get: `SELECT ${SELECT_PLANT} FROM plants WHERE owner_id = ?1 AND id = ?2`,
  insert: `INSERT INTO plants (owner_id, ${PLANT_FIELDS.map(({ column }) => column).join(", ")})
    VALUES (?1, ${PLANT_FIELDS.map((_, i) => `?${i + 2}`).join(", ")})
    ON CONFLICT DO NOTHING RETURNING ${SELECT_PLANT}`,
  delete: "DELETE FROM plants WHERE owner_id = ?1 AND id = ?2 RETURNING id",
  deleteIf: `DELETE FROM plants WHERE owner_id = ?1 AND id = ?2 AND ${holds(3)} RETURNING id`,
  update: `${UPDATE} RETURNING ${SELECT_PLANT}`,
  updateIf: `${UPDATE} AND ${holds(3 + 2 * VALUE_FIELDS.length)} RETURNING ${SELECT_PLANT}`,
};

const CHANGE_COLUMNS = PLANT_FIELDS.map(({ column }) => column).join(", ");
const LOG_CHANGE = `INSERT INTO plant_changes (owner_id, type, at, ${CHANGE_COLUMNS})
  SELECT owner_id, ?3, ?4, ${CHANGE_COLUMNS} FROM plants WHERE owner_id = ?1 AND id = ?2`;
const SELECT_CHANGE = `SELECT seq, owner_id AS ownerId, type, at, ${SELECT_PLANT} FROM plant_changes`;
/** Of the oldest ?2 changes, those before ?1 that every enabled endpoint of their owner has had, never the newest. */
const PRUNABLE = `SELECT seq FROM (SELECT seq, at, owner_id FROM plant_changes ORDER BY seq LIMIT (?2 + 0)) c
  WHERE at < (?1 + 0) AND seq < (SELECT max(seq) FROM plant_changes)
    AND NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.owner_id = c.owner_id AND w.disabled_at IS NULL AND w.change_cursor < c.seq)`;

/** The change log, written in a plant write's own savepoint: (owner, id, type, at) first. */
export const CHANGE_SQL = {
  /** After a create or an update: the plant as it is now, when the write before changed it. */
  logAfter: `${LOG_CHANGE} AND changes() > 0`,
  /** Before a delete, with its conditions: the plant as it was. */
  logBefore: (expected: boolean) => (expected ? `${LOG_CHANGE} AND ${holds(5)}` : LOG_CHANGE),
  page: `${SELECT_CHANGE} WHERE owner_id = (?1 + 0) AND seq > (?2 + 0) ORDER BY seq LIMIT (?3 + 0)`,
  all: `${SELECT_CHANGE} WHERE seq > (?1 + 0) ORDER BY seq LIMIT (?2 + 0)`,
  cursor: `SELECT max(coalesce((SELECT max(seq) FROM plant_changes WHERE owner_id = (?1 + 0)), 0),
      changes_pruned_through) AS newest, changes_pruned_through AS prunedThrough FROM users WHERE id = (?1 + 0)`,
  newest: "SELECT coalesce(max(seq), 0) AS newest FROM plant_changes",
  /** Then `prune`, in the same savepoint: the owners' marks first, from the same rows. */
  markPruned: `UPDATE users SET changes_pruned_through = p.through FROM (
      SELECT owner_id, max(seq) AS through FROM plant_changes WHERE seq IN (${PRUNABLE}) GROUP BY owner_id
    ) AS p WHERE users.id = p.owner_id AND p.through > users.changes_pruned_through`,
  prune: `DELETE FROM plant_changes WHERE seq IN (${PRUNABLE}) RETURNING 1`,
};

/** A keyed create as one savepoint's steps: `changes()` tells `record` the plant went in, `read` the record. */
const PLANT_VALUES = PLANT_FIELDS.map((_, i) => `?${i + 3}`).join(", ");
export const IDEMPOTENCY_SQL = {
  dropExpired: "DELETE FROM idempotency_keys WHERE owner_id = ?1 AND key = ?2 AND created_at <= ?3",
  /** Then CHANGE_SQL.logAfter, which leaves `changes()` as it found it (1 or 0) for `record`. */
  insertPlant: `INSERT INTO plants (owner_id, ${PLANT_FIELDS.map(({ column }) => column).join(", ")})
    SELECT ?1, ${PLANT_VALUES} WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE owner_id = ?1 AND key = ?2)
    ON CONFLICT DO NOTHING`,
  /** (owner, key, hash, created: status, body, etag, taken: status, body, etag, at). */
  record: `INSERT INTO idempotency_keys (owner_id, key, request_hash, status, body, etag, created_at)
    VALUES (?1, ?2, ?3, iif(changes() > 0, ?4, ?7), iif(changes() > 0, ?5, ?8), iif(changes() > 0, ?6, ?9), ?10)
    ON CONFLICT DO NOTHING`,
  read: `SELECT changes() AS fresh, request_hash AS requestHash, status, body, etag
    FROM idempotency_keys WHERE owner_id = ?1 AND key = ?2`,
  prune: `DELETE FROM idempotency_keys WHERE rowid IN (
      SELECT rowid FROM idempotency_keys WHERE created_at < (?1 + 0) ORDER BY created_at LIMIT (?2 + 0)
    ) RETURNING 1`,
};

const TOKEN_FIELDS = `t.id, u.name AS user, t.name, t.scopes, t.created_at AS createdAt, t.expires_at AS expiresAt,
  t.last_used_at AS lastUsedAt, t.revoked_at AS revokedAt`;

export const TOKEN_SQL = {
  findActive:
    "SELECT id, user_id, last_used_at, scopes, expires_at FROM tokens WHERE hash = (?1 || '') AND revoked_at IS NULL",
  insertUser: "INSERT INTO users (name, created_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
  insertToken: `INSERT INTO tokens (user_id, hash, created_at, name, scopes, expires_at)
    SELECT id, ?2, ?3, ?4, ?5, ?6 FROM users WHERE name = ?1 RETURNING id`,
  /** A token of user ?1, unless ?7 of theirs are unrevoked already. */
  createToken: `INSERT INTO tokens (user_id, hash, created_at, name, scopes, expires_at)
    SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE (SELECT count(*) FROM tokens WHERE user_id = ?1 AND revoked_at IS NULL) < ?7
    RETURNING id`,
  anyToken: "SELECT 1 FROM tokens LIMIT 1",
  bootstrapUser:
    "INSERT INTO users (name, created_at) SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM tokens) ON CONFLICT DO NOTHING",
  bootstrapToken: `INSERT INTO tokens (user_id, hash, created_at, name, scopes, expires_at) SELECT id, ?2, ?3, ?4, ?5, ?6
    FROM users WHERE name = ?1 AND NOT EXISTS (SELECT 1 FROM tokens) RETURNING id`,
  /** Every token, or user ?1's, or only token ?2. */
  list: `SELECT ${TOKEN_FIELDS} FROM tokens t JOIN users u ON u.id = t.user_id
    WHERE (?1 IS NULL OR t.user_id = ?1) AND (?2 IS NULL OR t.id = ?2) ORDER BY t.id`,
  revokedAt: "SELECT revoked_at FROM tokens WHERE id = ?1 AND (?2 IS NULL OR user_id = ?2)",
  revoke: `UPDATE tokens SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL AND (?3 IS NULL OR user_id = ?3)
    RETURNING id`,
  touch: "UPDATE tokens SET last_used_at = ?1 WHERE id = ?2",
  valid: `SELECT id FROM tokens WHERE id IN (SELECT value FROM json_each(?1)) AND revoked_at IS NULL
    AND (expires_at IS NULL OR expires_at > ?2)`,
};

export const STATUS_SQL = {
  ping: "SELECT 1",
  /** From the header: the same cost at any size. */
  databaseBytes: "SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()",
};
