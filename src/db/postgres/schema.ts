import { sql } from "drizzle-orm";
import { bigint, index, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { CHANGE_TYPES } from "../../core/changes";
import { DELIVERY_STATUSES } from "../../core/webhooks";

// The SQLite schema's tables (src/db/sqlite/schema.ts, which says what each is for) in PostgreSQL's types.

const time = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });

export const users = pgTable("users", {
  id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
  name: text("name").notNull().unique(),
  createdAt: time("created_at").notNull(),
  changesPrunedThrough: bigint("changes_pruned_through", { mode: "number" }).notNull().default(0),
});

/** A user's id, the row's owner. */
const userRef = (name: string) =>
  integer(name)
    .notNull()
    .references(() => users.id);

const plantColumns = () => ({
  id: bigint("id", { mode: "bigint" }).notNull(),
  name: text("name").notNull(),
  tag: text("tag"),
});

export const tokens = pgTable(
  "tokens",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    userId: userRef("user_id"),
    hash: text("hash").notNull().unique(),
    createdAt: time("created_at").notNull(),
    lastUsedAt: time("last_used_at"),
    revokedAt: time("revoked_at"),
    name: text("name").notNull().default("cli"),
    scopes: integer("scopes").notNull().default(15),
    expiresAt: time("expires_at"),
  },
  (table) => [index("tokens_user_id_idx").on(table.userId)],
);

export const plants = pgTable(
  "plants",
  {
    ownerId: userRef("owner_id"),
    ...plantColumns(),
  },
  // Partial, unlike SQLite's: whole, a generic plan would read a large owner's untagged list from
  // it and sort it (tests/engines/postgres-plan.test.ts); `tag = $n` implies the predicate.
  (table) => [
    primaryKey({ columns: [table.ownerId, table.id] }),
    index("plants_owner_tag_id_name_idx")
      .on(table.ownerId, table.tag, table.id, table.name)
      .where(sql`${table.tag} IS NOT NULL`),
  ],
);

const changeColumns = () => ({
  ownerId: integer("owner_id").notNull(),
  type: text("type", { enum: CHANGE_TYPES }).notNull(),
  at: time("at").notNull(),
  ...plantColumns(),
});

/** Changes wait here without a seq until a stamp numbers them in order (docs/decisions/0010-change-log-order.md). */
export const plantChangeInbox = pgTable("plant_change_inbox", {
  pos: bigint("pos", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
  ...changeColumns(),
});

export const plantChanges = pgTable(
  "plant_changes",
  { seq: bigint("seq", { mode: "number" }).primaryKey(), ...changeColumns() },
  (table) => [index("plant_changes_owner_seq_idx").on(table.ownerId, table.seq)],
);

export const webhooks = pgTable(
  "webhooks",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    ownerId: userRef("owner_id"),
    url: text("url").notNull(),
    secret: text("secret").notNull(),
    createdAt: time("created_at").notNull(),
    disabledAt: time("disabled_at"),
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    lastFailedAt: time("last_failed_at"),
    events: text("events"),
    changeCursor: bigint("change_cursor", { mode: "number" }).notNull().default(0),
  },
  (table) => [index("webhooks_owner_id_idx").on(table.ownerId)],
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
    type: text("type", { enum: CHANGE_TYPES }).notNull().default("plant.created"),
    status: text("status", { enum: DELIVERY_STATUSES }).notNull().default("pending"),
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
    // Each endpoint's first attempts go as a run from its oldest unattempted delivery (the claim's head).
    index("webhook_deliveries_first_attempt_idx")
      .on(table.webhookId, table.seq)
      .where(sql`${table.attempts} = 0 AND ${table.nextAttemptAt} IS NOT NULL`),
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
    outcome: text("outcome", { enum: DELIVERY_STATUSES }).notNull(),
    retryInMs: integer("retry_in_ms"),
  },
  (table) => [primaryKey({ columns: [table.deliverySeq, table.attempt] })],
);

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    ownerId: userRef("owner_id"),
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
