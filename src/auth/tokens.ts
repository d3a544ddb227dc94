import { and, asc, eq, isNull } from "drizzle-orm";
import { boundText } from "../db/bound";
import type { AppDatabase } from "../db/client";
import type { GroupCommit } from "../db/group-commit";
import { tokens, users } from "../db/schema";

/** A recognisable prefix lets secret scanners find leaked tokens. */
export const TOKEN_PREFIX = "pst_";
/** last_used_at is written at most this often per token, so reads do not become writes. */
const LAST_USED_GRANULARITY_MS = 60_000;

export const USER_NAME_RULE = "must be 1 to 64 characters of letters, digits, '.', '_' or '-'";
const USER_NAME = /^[A-Za-z0-9._-]{1,64}$/;

export type Clock = () => number;

export interface AuthenticatedUser {
  id: number;
  tokenId: number;
}

export interface IssuedToken {
  id: number;
  user: string;
  /** The only time the secret exists outside the client: show it once, never store it. */
  token: string;
}

/** 256 bits from the CSPRNG, base64url. */
export function generateToken(): string {
  return TOKEN_PREFIX + Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}

export function hashToken(token: string): string {
  return Bun.SHA256.hash(token, "hex") as string;
}

export function isValidUserName(name: string): boolean {
  return USER_NAME.test(name);
}

/**
 * Tokens and their users. With `writes` (the server's group commit), recording a token's last
 * use is bookkeeping done beside the request, never a write the request waits for or fails on:
 * a read must not fail because the disk is full or another process holds the write lock.
 */
export function createTokenStore(db: AppDatabase, clock: Clock = Date.now, writes?: GroupCommit) {
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
      .run(() => touch(tokenId, now), { bookkeeping: true })
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
    issue,

    /** The user behind a token, or undefined for an unknown or revoked one. */
    authenticate(token: string): AuthenticatedUser | undefined {
      const row = findActiveByHash.values(hashToken(token))[0] as [number, number, number | null] | undefined;
      if (!row) return undefined;
      const [tokenId, userId, lastUsedAt] = row;
      const now = clock();
      if (lastUsedAt === null || now - lastUsedAt >= LAST_USED_GRANULARITY_MS) recordUse(tokenId, now);
      return { id: userId, tokenId };
    },

    /** First start only: a database that has never held a token gets one for `admin`. */
    bootstrap(): IssuedToken | undefined {
      return db.transaction(
        (tx) => {
          if (tx.select({ id: tokens.id }).from(tokens).limit(1).get()) return undefined;
          return issue("admin");
        },
        { behavior: "immediate" },
      );
    },

    list() {
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

    /** "revoked", or why not: the caller turns that into its own message. */
    revoke(tokenId: number): "revoked" | "already-revoked" | "not-found" {
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

export type TokenStore = ReturnType<typeof createTokenStore>;
