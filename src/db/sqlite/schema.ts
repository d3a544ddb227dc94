import { sql } from "drizzle-orm";
import { customType, index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * A signed 64-bit integer kept exact: bun:sqlite binds a bigint as INTEGER without rounding,
 * and a statement with `safeIntegers(true)` reads it back as a bigint. Without that, the
 * driver hands over a number already rounded past 2^53: reading one is refused rather than
 * turned into a wrong bigint.
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
});

export const tokens = sqliteTable(
  "tokens",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    /** SHA-256 of the token, hex. The token itself is never stored. */
    hash: text("hash").notNull().unique(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    lastUsedAt: integer("last_used_at", { mode: "timestamp_ms" }),
    /** Revoked tokens stay as rows so that a revoked-only table never re-triggers bootstrap. */
    revokedAt: integer("revoked_at", { mode: "timestamp_ms" }),
  },
  (table) => [index("tokens_user_id_idx").on(table.userId)],
);

export const plants = sqliteTable(
  "plants",
  {
    ownerId: integer("owner_id")
      .notNull()
      .references(() => users.id),
    id: int64("id").notNull(),
    name: text("name").notNull(),
    tag: text("tag"),
  },
  // Ids are unique per owner; the key also serves the ordered per-owner list. The tag filter
  // walks its own index in id order, however few of the owner's plants carry the tag; the
  // index also holds the name, so a tagged page is read from it alone: 21 tagged plants of an
  // owner's 100,000 took 14–15 µs through a row lookup per plant and 9–10 µs from the index
  // (`bun bench/tag-index.ts`).
  (table) => [
    primaryKey({ columns: [table.ownerId, table.id] }),
    index("plants_owner_tag_id_name_idx").on(table.ownerId, table.tag, table.id, table.name),
  ],
);

/**
 * A user's webhook endpoints. The secret is kept as issued: the server reads it back to sign
 * every delivery (docs/webhooks.md, "Webhook secrets and a leaked database").
 */
export const webhooks = sqliteTable(
  "webhooks",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    ownerId: integer("owner_id")
      .notNull()
      .references(() => users.id),
    url: text("url").notNull(),
    secret: text("secret").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    /** Set when the endpoint answered 410: no more deliveries are made to it. */
    disabledAt: integer("disabled_at", { mode: "timestamp_ms" }),
    /** Attempts failed in a row, and when the latest ended: its circuit (src/webhooks/rules.ts). */
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    lastFailedAt: integer("last_failed_at", { mode: "timestamp_ms" }),
  },
  (table) => [index("webhooks_owner_id_idx").on(table.ownerId)],
);

/**
 * The outbox's inbox: one row per created plant whose owner has an enabled endpoint, written by
 * a trigger on plants in the plant's own statement (drizzle/sqlite/0007), so it commits with the
 * plant. `last_webhook_id` is the owner's newest enabled endpoint then: an endpoint registered
 * later has a larger id and gets nothing. The dispatcher's claim fans events out into
 * deliveries in batches (deleting an event inserts its deliveries, by a trigger), off the
 * request's path, except while every endpoint of the owner rests with deliveries pending.
 * No AUTOINCREMENT: it would write sqlite_sequence on every create.
 */
export const webhookEvents = sqliteTable(
  "webhook_events",
  {
    seq: integer("seq").primaryKey(),
    ownerId: integer("owner_id").notNull(),
    lastWebhookId: integer("last_webhook_id").notNull(),
    /** The exact body to send: the NewPlant as stored. */
    payload: text("payload").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  // Owner by owner: a claim fans out only the events of owners with an endpoint taking attempts.
  (table) => [index("webhook_events_owner_seq_idx").on(table.ownerId, table.seq)],
);

/**
 * The outbox: one row per created plant per endpoint, fanned out from webhook_events.
 * `next_attempt_at` is set exactly while the delivery is pending; a claimed one has it moved
 * past the attempt. Delivered and failed ones go with their attempts once
 * WEBHOOK_RETENTION_DAYS old.
 */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    /** The `webhook-id` header: the same on every attempt. */
    id: text("id").notNull().unique(),
    webhookId: integer("webhook_id")
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    /** The exact body sent: the NewPlant as stored, its id an exact JSON integer. */
    payload: text("payload").notNull(),
    status: text("status", { enum: ["pending", "delivered", "failed"] })
      .notNull()
      .default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastStatus: integer("last_status"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    nextAttemptAt: integer("next_attempt_at", { mode: "timestamp_ms" }),
  },
  // A claim looks for due deliveries endpoint by endpoint (a few per endpoint, round-robin), so
  // its cost follows the endpoints, not how many deliveries one of them has queued.
  (table) => [
    index("webhook_deliveries_webhook_seq_idx").on(table.webhookId, table.seq),
    index("webhook_deliveries_endpoint_due_idx")
      .on(table.webhookId, table.nextAttemptAt)
      .where(sql`${table.nextAttemptAt} IS NOT NULL`),
    // Delivered and failed ones, oldest first: retention removes them in batches (src/webhooks/retention.ts).
    index("webhook_deliveries_finished_idx").on(table.createdAt).where(sql`${table.nextAttemptAt} IS NULL`),
  ],
);

/**
 * Every attempt, as made. Inserting one applies it to its delivery (and a 410 to its
 * endpoint) through a trigger, so recording stays one statement; a second record of the same
 * attempt is ignored.
 */
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
    outcome: text("outcome", { enum: ["pending", "delivered", "failed"] }).notNull(),
    retryInMs: integer("retry_in_ms"),
  },
  (table) => [primaryKey({ columns: [table.deliverySeq, table.attempt] })],
);

/**
 * The kept answer to a create sent with an `Idempotency-Key` (SPEC, "Retrying a create safely"),
 * written in the plant's own transaction: a later request by the same owner with the same key
 * gets it again, byte for byte, until IDEMPOTENCY_TTL_HOURS after `created_at`.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    ownerId: integer("owner_id")
      .notNull()
      .references(() => users.id),
    key: text("key").notNull(),
    /** SHA-256 of the request (method, path and the plant sent), hex: another body with the key is a 422. */
    requestHash: text("request_hash").notNull(),
    status: integer("status").notNull(),
    /** The answer's exact body, and its ETag when it had one. */
    body: text("body").notNull(),
    etag: text("etag"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  // Expired keys go oldest first, in batches (src/plants/idempotency-retention.ts).
  (table) => [
    primaryKey({ columns: [table.ownerId, table.key] }),
    index("idempotency_keys_created_at_idx").on(table.createdAt),
  ],
);

export type UserRow = typeof users.$inferSelect;
export type TokenRow = typeof tokens.$inferSelect;
export type PlantRow = typeof plants.$inferSelect;
