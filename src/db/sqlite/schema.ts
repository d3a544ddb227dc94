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

export type UserRow = typeof users.$inferSelect;
export type TokenRow = typeof tokens.$inferSelect;
export type PlantRow = typeof plants.$inferSelect;
