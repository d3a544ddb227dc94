import { and, asc, eq, isNull, sql } from "drizzle-orm";
import {
  type Clock,
  generateToken,
  hashToken,
  isValidUserName,
  LAST_USED_GRANULARITY_MS,
  USER_NAME_RULE,
} from "../../auth/tokens";
import { positional } from "../positional";
import type { TokenStore } from "../stores";
import type { PostgresDatabase } from "./client";
import { createGroups } from "./groups";
import { tokens, users } from "./schema";

/** A constant for the bootstrap's transaction-scoped advisory lock ("admin" in ASCII). */
const BOOTSTRAP_LOCK = 0x61646d696e;

/**
 * Tokens and their users on PostgreSQL. Every lookup reads the shared table, so a token revoked
 * through any instance or the CLI fails everywhere from its next request. Recording a token's
 * last use is bookkeeping beside the request: at most one write per token per minute per
 * instance, never awaited by the request.
 */
export function createPostgresTokenStore(db: PostgresDatabase, clock: Clock = Date.now): TokenStore {
  // Every request runs this. Lookups that arrive together share one statement (groups.ts): a
  // read costs PostgreSQL two statements, and this halves the share of the first under load.
  // Drizzle writes the SQL; the driver runs it and returns bare rows (as the list does,
  // plants.ts). Hashes are hex, so a comma list carries them.
  const findActiveByHashes = positional(
    db
      .select({ hash: tokens.hash, tokenId: tokens.id, userId: tokens.userId, lastUsedAt: tokens.lastUsedAt })
      .from(tokens)
      .where(
        and(
          sql`${tokens.hash} = ANY(string_to_array(${sql.placeholder("hashes")}::text, ','))`,
          isNull(tokens.revokedAt),
        ),
      ),
    ["hashes"],
  );
  type Found = [hash: string, tokenId: number, userId: number, lastUsedAt: Date | null];
  const lookups = createGroups<string, Found | undefined>(async (group) => {
    const hashes = [...new Set(group.map((waiting) => waiting.item))];
    const rows = (await db.$client.unsafe(findActiveByHashes, [hashes.join(",")]).values()) as Found[];
    const byHash = new Map(rows.map((row) => [row[0], row]));
    for (const waiting of group) waiting.resolve(byHash.get(waiting.item));
  });
  const touch = db
    .update(tokens)
    .set({ lastUsedAt: sql`${sql.placeholder("now")}::timestamptz` })
    .where(eq(tokens.id, sql.placeholder("tokenId")))
    .prepare("tokens_touch");
  const recording = new Set<number>();

  function recordUse(tokenId: number, now: number) {
    if (recording.has(tokenId)) return;
    recording.add(tokenId);
    touch
      .execute({ tokenId, now: new Date(now).toISOString() })
      .catch(() => {})
      .finally(() => recording.delete(tokenId));
  }

  async function issueIn(tx: Pick<PostgresDatabase, "insert" | "select">, userName: string) {
    if (!isValidUserName(userName)) throw new Error(`user name ${USER_NAME_RULE}`);
    const now = new Date(clock());
    const token = generateToken();
    await tx.insert(users).values({ name: userName, createdAt: now }).onConflictDoNothing();
    const [user] = await tx.select({ id: users.id }).from(users).where(eq(users.name, userName));
    if (!user) throw new Error("user vanished while issuing a token");
    const [row] = await tx
      .insert(tokens)
      .values({ userId: user.id, hash: hashToken(token), createdAt: now })
      .returning({ id: tokens.id });
    if (!row) throw new Error("the new token's row was not returned");
    return { id: row.id, user: userName, token };
  }

  return {
    issue: (userName) => db.transaction((tx) => issueIn(tx, userName)),

    async authenticate(token) {
      const row = await lookups.add(hashToken(token));
      if (!row) return undefined;
      const [, tokenId, userId, lastUsedAt] = row;
      const now = clock();
      if (lastUsedAt === null || now - lastUsedAt.getTime() >= LAST_USED_GRANULARITY_MS) recordUse(tokenId, now);
      return { id: userId, tokenId };
    },

    // Instances starting together on an empty database: the lock makes exactly one of them
    // see no token and issue the first one.
    bootstrap: () =>
      db.transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`);
        const [any] = await tx.select({ id: tokens.id }).from(tokens).limit(1);
        return any ? undefined : issueIn(tx, "admin");
      }),

    list: () =>
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

    async revoke(tokenId) {
      const [revoked] = await db
        .update(tokens)
        .set({ revokedAt: new Date(clock()) })
        .where(and(eq(tokens.id, tokenId), isNull(tokens.revokedAt)))
        .returning({ id: tokens.id });
      if (revoked) return "revoked";
      const [row] = await db.select({ id: tokens.id }).from(tokens).where(eq(tokens.id, tokenId));
      return row ? "already-revoked" : "not-found";
    },
  };
}
