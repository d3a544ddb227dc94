import { sql } from "drizzle-orm";
import { customType, index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { CHANGE_TYPES } from "../../core/changes";
import { DELIVERY_STATUSES } from "../../core/webhooks";

/**
 * A signed 64-bit integer kept exact: read with `safeIntegers(true)` it comes back as a bigint;
 * without, the driver may already have rounded it past 2^53, so that is refused.
 */
const int64 = customType<{ data: bigint; driverData: bigint | number }>({
  dataType: () => "integer",
  fromDriver: (value) => {
    if (typeof value === "bigint") return value;
    if (!Number.isSafeInteger(value)) {
      throw new RangeError("an int64 column was read without safeIntegers: the driver already rounded it");
    }
    return BigInt(value);
  },
});

export const users = sqliteTable("users", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  name: text("name").notNull().unique(),
  createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  /** The newest of the user's changes pruned: a cursor before it has missed some (410). */
  changesPrunedThrough: integer("changes_pruned_through").notNull().default(0),
});

/** A user's id, the row's owner. */
const userRef = (name: string) =>
  integer(name)
    .notNull()
    .references(() => users.id);

/** A plant's own columns, declared once: the plants table and the change log both hold them. */
const plantColumns = () => ({
  id: int64("id").notNull(),
  name: text("name").notNull(),
  tag: text("tag"),
});

export const tokens = sqliteTable(
  "tokens",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: userRef("user_id"),
    /** SHA-256 of the token, hex; the token itself is never stored. */
    hash: text("hash").notNull().unique(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    lastUsedAt: integer("last_used_at", { mode: "timestamp_ms" }),
    /** Revoked tokens stay as rows so that a revoked-only table never re-triggers bootstrap. */
    revokedAt: integer("revoked_at", { mode: "timestamp_ms" }),
    name: text("name").notNull().default("cli"),
    /** One bit per scope, in core/tokens.ts SCOPES' order; tokens from before scopes have all four. */
    scopes: integer("scopes").notNull().default(15),
    expiresAt: integer("expires_at", { mode: "timestamp_ms" }),
  },
  (table) => [index("tokens_user_id_idx").on(table.userId)],
);

export const plants = sqliteTable(
  "plants",
  {
    ownerId: userRef("owner_id"),
    ...plantColumns(),
  },
  // The key serves the per-owner list in id order; the tag index holds the name too, so a tagged
  // page is read from the index alone (bench/tag-index.ts).
  (table) => [
    primaryKey({ columns: [table.ownerId, table.id] }),
    index("plants_owner_tag_id_name_idx").on(table.ownerId, table.tag, table.id, table.name),
  ],
);

/** The change log (docs/api.md#following-changes); the newest row is never pruned, so a seq is never reused. */
export const plantChanges = sqliteTable(
  "plant_changes",
  {
    seq: integer("seq").primaryKey(),
    ownerId: integer("owner_id").notNull(),
    type: text("type", { enum: CHANGE_TYPES }).notNull(),
    at: integer("at", { mode: "timestamp_ms" }).notNull(),
    ...plantColumns(),
  },
  (table) => [index("plant_changes_owner_seq_idx").on(table.ownerId, table.seq)],
);

/** The secret is kept as issued: every delivery is signed with it (docs/webhooks.md). */
export const webhooks = sqliteTable(
  "webhooks",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    ownerId: userRef("owner_id"),
    url: text("url").notNull(),
    secret: text("secret").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    /** Set when the endpoint answered 410: nothing more is sent to it. */
    disabledAt: integer("disabled_at", { mode: "timestamp_ms" }),
    /** Attempts failed in a row, and when the latest ended: its circuit (src/webhooks/rules.ts). */
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    lastFailedAt: integer("last_failed_at", { mode: "timestamp_ms" }),
    /** The change types it takes, a JSON array; none: the interface's plant.created, its body the NewPlant. */
    events: text("events"),
    /** The newest of its owner's changes made into its deliveries (src/webhooks/fan-out.ts). */
    changeCursor: integer("change_cursor").notNull().default(0),
  },
  (table) => [index("webhooks_owner_id_idx").on(table.ownerId)],
);

/** The outbox, one row per plant per endpoint: `next_attempt_at` is set exactly while it is pending. */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    /** The `webhook-id` header: the same on every attempt. */
    id: text("id").notNull().unique(),
    webhookId: integer("webhook_id")
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    /** The exact body sent: the change, or for an endpoint without `events` the NewPlant as stored. */
    payload: text("payload").notNull(),
    type: text("type", { enum: CHANGE_TYPES }).notNull().default("plant.created"),
    status: text("status", { enum: DELIVERY_STATUSES }).notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastStatus: integer("last_status"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    nextAttemptAt: integer("next_attempt_at", { mode: "timestamp_ms" }),
  },
  // Claims look endpoint by endpoint: their cost follows the endpoints, not one endpoint's backlog.
  (table) => [
    index("webhook_deliveries_webhook_seq_idx").on(table.webhookId, table.seq),
    index("webhook_deliveries_endpoint_due_idx")
      .on(table.webhookId, table.nextAttemptAt)
      .where(sql`${table.nextAttemptAt} IS NOT NULL`),
    // Each endpoint's first attempts go as a run from its oldest unattempted delivery (the claim's head).
    index("webhook_deliveries_first_attempt_idx")
      .on(table.webhookId, table.seq)
      .where(sql`${table.attempts} = 0 AND ${table.nextAttemptAt} IS NOT NULL`),
    // Delivered and failed ones, oldest first: retention removes them in batches (src/core/pruner.ts).
    index("webhook_deliveries_finished_idx").on(table.createdAt).where(sql`${table.nextAttemptAt} IS NULL`),
  ],
);

/** Every attempt; a trigger applies it to its delivery (and a 410 to its endpoint), so recording is one statement. */
export const webhookAttempts = sqliteTable(
  "webhook_attempts",
  {
    deliverySeq: integer("delivery_seq")
      .notNull()
      .references(() => webhookDeliveries.seq, { onDelete: "cascade" }),
    attempt: integer("attempt").notNull(),
    at: integer("at", { mode: "timestamp_ms" }).notNull(),
    statusCode: integer("status_code"),
    durationMs: integer("duration_ms").notNull(),
    error: text("error"),
    /** What the delivery becomes: "pending" again (retried after retry_in_ms), "delivered" or "failed". */
    outcome: text("outcome", { enum: DELIVERY_STATUSES }).notNull(),
    retryInMs: integer("retry_in_ms"),
  },
  (table) => [primaryKey({ columns: [table.deliverySeq, table.attempt] })],
);

/** The kept answer to a create sent with an Idempotency-Key, written in the plant's own transaction. */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    ownerId: userRef("owner_id"),
    key: text("key").notNull(),
    /** SHA-256 of the request (method, path and the plant sent), hex: another body with the key is a 422. */
    requestHash: text("request_hash").notNull(),
    status: integer("status").notNull(),
    /** The answer's exact body, and its ETag when it had one. */
    body: text("body").notNull(),
    etag: text("etag"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  // Expired keys go oldest first, in batches (src/core/pruner.ts).
  (table) => [
    primaryKey({ columns: [table.ownerId, table.key] }),
    index("idempotency_keys_created_at_idx").on(table.createdAt),
  ],
);
