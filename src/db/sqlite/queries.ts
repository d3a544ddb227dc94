import { getTableColumns } from "drizzle-orm";
import type { PlantFilter } from "../../core/stores";
import { plants } from "./schema";

/*
 * Every statement the SQLite stores run, as SQL text; the stores prepare each once when they
 * open. A bound value in a WHERE or LIMIT is written `(?n + 0)` or `(?n || '')`: alone, it makes
 * SQLite re-prepare the statement on every run (docs/decisions/0004-sqlite-bound-expressions.md).
 */

/** A plant's columns as the schema declares them (the owner aside), each read under its field's name. */
export const PLANT_FIELDS = Object.entries(getTableColumns(plants))
  .filter(([field]) => field !== "ownerId")
  .map(([field, column]) => ({ field, column: column.name }));
const PLANT_COLUMNS = PLANT_FIELDS.map(({ field, column }) => (field === column ? column : `${column} AS "${field}"`));
const SELECT_PLANT = PLANT_COLUMNS.join(", ");

/** An update's SET: each field is set only when its flag is (?3 for the name, ?5 for the tag). */
const SET_CHANGE = "name = CASE WHEN ?3 THEN ?4 ELSE name END, tag = CASE WHEN ?5 THEN ?6 ELSE tag END";

/** One list statement per filter shape; it binds the owner, then the tag, the cursor and the row count. */
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
  /** (owner, id, expected name, expected tag): only while the plant is still the one expected. */
  deleteIf: "DELETE FROM plants WHERE owner_id = ?1 AND id = ?2 AND name = ?3 AND tag IS ?4 RETURNING id",
  /** (owner, id, set name?, name, set tag?, tag). */
  update: `UPDATE plants SET ${SET_CHANGE} WHERE owner_id = ?1 AND id = ?2 RETURNING ${SELECT_PLANT}`,
  /** As `update`, then (expected name, expected tag): the precondition is checked in the write itself. */
  updateIf: `UPDATE plants SET ${SET_CHANGE}
    WHERE owner_id = ?1 AND id = ?2 AND name = ?7 AND tag IS ?8 RETURNING ${SELECT_PLANT}`,
};

/**
 * A keyed create, as the steps of one savepoint (writer.ts, Steps): an expired record is
 * dropped, the plant goes in unless a record holds the key, the answer is kept unless one
 * already was (`changes()` tells whether the plant went in, then whether the record did), and
 * the record is read back.
 */
const PLANT_VALUES = PLANT_FIELDS.map((_, i) => `?${i + 3}`).join(", ");
export const IDEMPOTENCY_SQL = {
  /** (owner, key, expired at). */
  dropExpired: "DELETE FROM idempotency_keys WHERE owner_id = ?1 AND key = ?2 AND created_at <= ?3",
  /** (owner, key, then the plant's fields as PLANT_SQL.insert binds them from ?2). */
  insertPlant: `INSERT INTO plants (owner_id, ${PLANT_FIELDS.map(({ column }) => column).join(", ")})
    SELECT ?1, ${PLANT_VALUES} WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE owner_id = ?1 AND key = ?2)
    ON CONFLICT DO NOTHING`,
  /** (owner, key, hash, created: status, body, etag, taken: status, body, etag, at). */
  record: `INSERT INTO idempotency_keys (owner_id, key, request_hash, status, body, etag, created_at)
    VALUES (?1, ?2, ?3, iif(changes() > 0, ?4, ?7), iif(changes() > 0, ?5, ?8), iif(changes() > 0, ?6, ?9), ?10)
    ON CONFLICT DO NOTHING`,
  /** (owner, key): the record, and whether the step before wrote it. */
  read: `SELECT changes() AS fresh, request_hash AS requestHash, status, body, etag
    FROM idempotency_keys WHERE owner_id = ?1 AND key = ?2`,
  /** (made before, count): the oldest records by their own index. */
  prune: `DELETE FROM idempotency_keys WHERE rowid IN (
      SELECT rowid FROM idempotency_keys WHERE created_at < (?1 + 0) ORDER BY created_at LIMIT (?2 + 0)
    ) RETURNING 1`,
};

export const TOKEN_SQL = {
  /** hash → [tokenId, userId, lastUsedAt]: every request runs it. */
  findActive: "SELECT id, user_id, last_used_at FROM tokens WHERE hash = (?1 || '') AND revoked_at IS NULL",
  insertUser: "INSERT INTO users (name, created_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
  /** The user by name: created just before in the same group when new. */
  insertToken:
    "INSERT INTO tokens (user_id, hash, created_at) SELECT id, ?2, ?3 FROM users WHERE name = ?1 RETURNING id",
  anyToken: "SELECT 1 FROM tokens LIMIT 1",
  /** First start only: the user and the token go in while no token was ever issued. */
  bootstrapUser:
    "INSERT INTO users (name, created_at) SELECT ?1, ?2 WHERE NOT EXISTS (SELECT 1 FROM tokens) ON CONFLICT DO NOTHING",
  bootstrapToken: `INSERT INTO tokens (user_id, hash, created_at) SELECT id, ?2, ?3 FROM users
    WHERE name = ?1 AND NOT EXISTS (SELECT 1 FROM tokens) RETURNING id`,
  /** [id, user name, createdAt, lastUsedAt, revokedAt] in id order. */
  list: `SELECT t.id, u.name, t.created_at, t.last_used_at, t.revoked_at
    FROM tokens t JOIN users u ON u.id = t.user_id ORDER BY t.id`,
  revokedAt: "SELECT revoked_at FROM tokens WHERE id = ?1",
  revoke: "UPDATE tokens SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL RETURNING id",
  touch: "UPDATE tokens SET last_used_at = ?1 WHERE id = ?2",
};

export const STATUS_SQL = {
  ping: "SELECT 1",
  /** Two pragmas from the database header: the same cost at 10 plants or 10 million. */
  databaseBytes: "SELECT page_count * page_size AS bytes FROM pragma_page_count(), pragma_page_size()",
  userVersion: "PRAGMA user_version",
};
