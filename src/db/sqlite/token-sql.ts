import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { positional } from "../positional";
import { boundText, placeholder as p } from "./bound";
import type { AppDatabase } from "./client";
import { tokens, users } from "./schema";

/**
 * The token store's SQL, written by Drizzle from the schema. Times are bound and read as epoch
 * milliseconds; Drizzle does not alias the columns it selects, so rows are read as values, in
 * the order selected here.
 */
export interface TokenSql {
  /** hash → [tokenId, userId, lastUsedAt]: every request runs it. */
  findActive: string;
  /** Whether the table holds any token, revoked ones included (bootstrap). */
  anyToken: string;
  insertUser: string;
  userByName: string;
  insertToken: string;
  /** [id, user name, createdAt, lastUsedAt, revokedAt] in id order. */
  list: string;
  /** id → [revokedAt]. */
  revokedAt: string;
  revoke: string;
}

export function tokenSql(db: AppDatabase): TokenSql {
  return {
    findActive: positional(
      db
        .select({ tokenId: tokens.id, userId: tokens.userId, lastUsedAt: tokens.lastUsedAt })
        .from(tokens)
        .where(and(eq(tokens.hash, boundText("hash")), isNull(tokens.revokedAt))),
      ["hash"],
    ),
    anyToken: positional(db.select({ id: tokens.id }).from(tokens).limit(sql.placeholder("one")), ["one"]),
    insertUser: positional(
      db
        .insert(users)
        .values({ name: p("name"), createdAt: p("at") })
        .onConflictDoNothing(),
      ["name", "at"],
    ),
    userByName: positional(
      db
        .select({ id: users.id })
        .from(users)
        .where(eq(users.name, p("name"))),
      ["name"],
    ),
    insertToken: positional(
      db
        .insert(tokens)
        .values({ userId: p("userId"), hash: p("hash"), createdAt: p("at") })
        .returning({ id: tokens.id }),
      ["userId", "hash", "at"],
    ),
    list: positional(
      db
        .select({
          id: tokens.id,
          user: users.name,
          createdAt: tokens.createdAt,
          lastUsedAt: tokens.lastUsedAt,
          revokedAt: tokens.revokedAt,
        })
        .from(tokens)
        .innerJoin(users, eq(users.id, tokens.userId))
        .orderBy(asc(tokens.id)),
      [],
    ),
    revokedAt: positional(
      db
        .select({ revokedAt: tokens.revokedAt })
        .from(tokens)
        .where(eq(tokens.id, p("id"))),
      ["id"],
    ),
    revoke: positional(
      db
        .update(tokens)
        .set({ revokedAt: p("at") })
        .where(eq(tokens.id, p("id"))),
      ["at", "id"],
    ),
  };
}
