import { and, asc, eq, isNull } from "drizzle-orm";
import {
  type Clock,
  generateToken,
  hashToken,
  type IssuedToken,
  isValidUserName,
  LAST_USED_GRANULARITY_MS,
  USER_NAME_RULE,
} from "../../auth/tokens";
import type { TokenStore } from "../stores";
import { boundText } from "./bound";
import type { AppDatabase } from "./client";
import { tokens, users } from "./schema";
import type { Writer } from "./writer";

/**
 * Tokens and their users on SQLite. With `writes` (the server's group commit), recording a
 * token's last use is bookkeeping done beside the request, never a write the request waits for
 * or fails on: a read must not fail because the disk is full or another process holds the
 * write lock. The answers are synchronous; the store interface's promises wrap them.
 */
export function createSqliteTokenStore(db: AppDatabase, clock: Clock = Date.now, writes?: Writer): TokenStore {
  // Every request runs this: Drizzle writes the SQL, the driver runs it and returns a raw row.
  const findActiveByHash = db.$client.prepare<unknown, [string]>(
    db
      .select({ tokenId: tokens.id, userId: tokens.userId, lastUsedAt: tokens.lastUsedAt })
      .from(tokens)
      .where(and(eq(tokens.hash, boundText("hash")), isNull(tokens.revokedAt)))
      .toSQL().sql,
  );

  const touch = (tokenId: number, now: number) =>
    db
      .update(tokens)
      .set({ lastUsedAt: new Date(now) })
      .where(eq(tokens.id, tokenId))
      .run();
  /** Tokens whose last use is being recorded: one write each, however many requests come meanwhile. */
  const recording = new Set<number>();

  function recordUse(tokenId: number, now: number) {
    if (!writes) {
      touch(tokenId, now);
      return;
    }
    if (recording.has(tokenId)) return;
    recording.add(tokenId);
    writes
      .run("touchToken", [now, tokenId], { bookkeeping: true })
      .catch(() => {})
      .finally(() => recording.delete(tokenId));
  }

  function issue(userName: string): IssuedToken {
    if (!isValidUserName(userName)) throw new Error(`user name ${USER_NAME_RULE}`);
    const now = new Date(clock());
    const token = generateToken();
    return db.transaction(
      (tx) => {
        tx.insert(users).values({ name: userName, createdAt: now }).onConflictDoNothing().run();
        const user = tx.select({ id: users.id }).from(users).where(eq(users.name, userName)).get();
        if (!user) throw new Error("user vanished while issuing a token");
        const row = tx
          .insert(tokens)
          .values({ userId: user.id, hash: hashToken(token), createdAt: now })
          .returning({ id: tokens.id })
          .get();
        return { id: row.id, user: userName, token };
      },
      { behavior: "immediate" },
    );
  }

  return {
    issue: async (userName) => issue(userName),

    authenticate(token) {
      const row = findActiveByHash.values(hashToken(token))[0] as [number, number, number | null] | undefined;
      if (!row) return undefined;
      const [tokenId, userId, lastUsedAt] = row;
      const now = clock();
      if (lastUsedAt === null || now - lastUsedAt >= LAST_USED_GRANULARITY_MS) recordUse(tokenId, now);
      return { id: userId, tokenId };
    },

    async bootstrap() {
      return db.transaction(
        (tx) => {
          if (tx.select({ id: tokens.id }).from(tokens).limit(1).get()) return undefined;
          return issue("admin");
        },
        { behavior: "immediate" },
      );
    },

    async list() {
      return db
        .select({
          id: tokens.id,
          user: users.name,
          createdAt: tokens.createdAt,
          lastUsedAt: tokens.lastUsedAt,
          revokedAt: tokens.revokedAt,
        })
        .from(tokens)
        .innerJoin(users, eq(users.id, tokens.userId))
        .orderBy(asc(tokens.id))
        .all();
    },

    async revoke(tokenId) {
      const row = db.select({ revokedAt: tokens.revokedAt }).from(tokens).where(eq(tokens.id, tokenId)).get();
      if (!row) return "not-found";
      if (row.revokedAt) return "already-revoked";
      db.update(tokens)
        .set({ revokedAt: new Date(clock()) })
        .where(eq(tokens.id, tokenId))
        .run();
      return "revoked";
    },
  };
}
