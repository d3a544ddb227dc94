import { sql } from "drizzle-orm";
import { bigint, index, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/*
 * The same tables, names and exports as the SQLite schema (src/db/sqlite/schema.ts), in
 * PostgreSQL's types: ids are `bigint` read as JS bigints (Bun's SQL client decodes int8 as a
 * string and Drizzle turns it into an exact bigint), times are `timestamptz`.
 */

const time = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

export const users = pgTable("users", {
  id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
  name: text("name").notNull().unique(),
  createdAt: time("created_at").notNull(),
});

export const tokens = pgTable(
  "tokens",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    /** SHA-256 of the token, hex. The token itself is never stored. */
    hash: text("hash").notNull().unique(),
    createdAt: time("created_at").notNull(),
    lastUsedAt: time("last_used_at"),
    /** Revoked tokens stay as rows so that a revoked-only table never re-triggers bootstrap. */
    revokedAt: time("revoked_at"),
  },
  (table) => [index("tokens_user_id_idx").on(table.userId)],
);

export const plants = pgTable(
  "plants",
  {
    ownerId: integer("owner_id")
      .notNull()
      .references(() => users.id),
    id: bigint("id", { mode: "bigint" }).notNull(),
    name: text("name").notNull(),
    tag: text("tag"),
  },
  // As on SQLite: the key serves the ordered per-owner list, and the tag index holds the name
  // so a tagged page is read from the index alone. Unlike SQLite's, the tag index is partial:
  // whole, it also covers an untagged list, and a generic plan (sized for the average owner)
  // would read a large owner's every plant from it and sort them, for each page
  // (tests/postgres-plan.test.ts). `tag = $n` implies the predicate, so tagged lists still use it.
  (table) => [
    primaryKey({ columns: [table.ownerId, table.id] }),
    index("plants_owner_tag_id_name_idx")
      .on(table.ownerId, table.tag, table.id, table.name)
      .where(sql`${table.tag} IS NOT NULL`),
  ],
);

/** As on SQLite (src/db/sqlite/schema.ts), where each table says what it is for. */
export const webhooks = pgTable(
  "webhooks",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    ownerId: integer("owner_id")
      .notNull()
      .references(() => users.id),
    url: text("url").notNull(),
    secret: text("secret").notNull(),
    createdAt: time("created_at").notNull(),
    disabledAt: time("disabled_at"),
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    lastFailedAt: time("last_failed_at"),
  },
  (table) => [index("webhooks_owner_id_idx").on(table.ownerId)],
);

export const webhookEvents = pgTable(
  "webhook_events",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    ownerId: integer("owner_id").notNull(),
    lastWebhookId: integer("last_webhook_id").notNull(),
    payload: text("payload").notNull(),
    createdAt: time("created_at").notNull(),
  },
  (table) => [index("webhook_events_owner_seq_idx").on(table.ownerId, table.seq)],
);

export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    seq: bigint("seq", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    id: text("id").notNull().unique(),
    webhookId: integer("webhook_id")
      .notNull()
      .references(() => webhooks.id, { onDelete: "cascade" }),
    payload: text("payload").notNull(),
    status: text("status", { enum: ["pending", "delivered", "failed"] })
      .notNull()
      .default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastStatus: integer("last_status"),
    createdAt: time("created_at").notNull(),
    nextAttemptAt: time("next_attempt_at"),
  },
  (table) => [
    index("webhook_deliveries_webhook_seq_idx").on(table.webhookId, table.seq),
    index("webhook_deliveries_endpoint_due_idx")
      .on(table.webhookId, table.nextAttemptAt)
      .where(sql`${table.nextAttemptAt} IS NOT NULL`),
    // Delivered and failed ones, oldest first: retention removes them in batches (src/webhooks/retention.ts).
    index("webhook_deliveries_finished_idx").on(table.createdAt).where(sql`${table.nextAttemptAt} IS NULL`),
  ],
);

export const webhookAttempts = pgTable(
  "webhook_attempts",
  {
    deliverySeq: bigint("delivery_seq", { mode: "number" })
      .notNull()
      .references(() => webhookDeliveries.seq, { onDelete: "cascade" }),
    attempt: integer("attempt").notNull(),
    at: time("at").notNull(),
    statusCode: integer("status_code"),
    durationMs: integer("duration_ms").notNull(),
    error: text("error"),
    outcome: text("outcome", { enum: ["pending", "delivered", "failed"] }).notNull(),
    retryInMs: integer("retry_in_ms"),
  },
  (table) => [primaryKey({ columns: [table.deliverySeq, table.attempt] })],
);

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    ownerId: integer("owner_id")
      .notNull()
      .references(() => users.id),
    key: text("key").notNull(),
    requestHash: text("request_hash").notNull(),
    status: integer("status").notNull(),
    body: text("body").notNull(),
    etag: text("etag"),
    createdAt: time("created_at").notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.ownerId, table.key] }),
    index("idempotency_keys_created_at_idx").on(table.createdAt),
  ],
);
