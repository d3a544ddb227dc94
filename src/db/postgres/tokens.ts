import type { SQL } from "bun";
import type { TokenStore } from "../../core/stores";
import {
  type Clock,
  generateToken,
  hashToken,
  isValidUserName,
  LAST_USED_GRANULARITY_MS,
  USER_NAME_RULE,
} from "../../core/tokens";
import { POSTGRES_SQL } from "./built-sql";
import { createGroups } from "./groups";

/** A constant for the bootstrap's transaction-scoped advisory lock ("admin" in ASCII). */
const BOOTSTRAP_LOCK = 0x61646d696e;

const TOKEN_SQL = POSTGRES_SQL.tokens;

/** A connection of the pool, or a transaction's: each runs the statements the same way. */
type Runner = Pick<SQL, "unsafe">;

/** The rows of a statement as arrays, values in the order it selects them. */
const rowsOf = <Row extends unknown[]>(runner: Runner, text: string, params: unknown[] = []) =>
  runner.unsafe(text, params).values() as Promise<Row[]>;

/**
 * Tokens and their users on PostgreSQL. Every lookup reads the shared table, so a token revoked
 * through any instance or the CLI fails everywhere from its next request. Recording a token's
 * last use is bookkeeping beside the request: at most one write per token per minute per
 * instance, never awaited by the request.
 */
export function createPostgresTokenStore(client: SQL, clock: Clock = Date.now): TokenStore {
  // Every request runs this. Lookups that arrive together share one statement (groups.ts): a
  // read costs PostgreSQL two statements, and this halves the share of the first under load.
  // Hashes are hex, so a comma list carries them.
  type Found = [hash: string, tokenId: number, userId: number, lastUsedAt: Date | null];
  const lookups = createGroups<string, Found | undefined>(async (group) => {
    const hashes = [...new Set(group.map((waiting) => waiting.item))];
    const rows = await rowsOf<Found>(client, TOKEN_SQL.findActiveByHashes, [hashes.join(",")]);
    const byHash = new Map(rows.map((row) => [row[0], row]));
    for (const waiting of group) waiting.resolve(byHash.get(waiting.item));
  });
  const recording = new Set<number>();

  function recordUse(tokenId: number, now: number) {
    if (recording.has(tokenId)) return;
    recording.add(tokenId);
    client
      .unsafe(TOKEN_SQL.touch, [new Date(now).toISOString(), tokenId])
      .catch(() => {})
      .finally(() => recording.delete(tokenId));
  }

  async function issueIn(tx: Runner, userName: string) {
    if (!isValidUserName(userName)) throw new Error(`user name ${USER_NAME_RULE}`);
    const now = new Date(clock()).toISOString();
    const token = generateToken();
    await tx.unsafe(TOKEN_SQL.insertUser, [userName, now]);
    const [user] = await rowsOf<[id: number]>(tx, TOKEN_SQL.userByName, [userName]);
    if (!user) throw new Error("user vanished while issuing a token");
    const [row] = await rowsOf<[id: number]>(tx, TOKEN_SQL.insertToken, [user[0], hashToken(token), now]);
    if (!row) throw new Error("the new token's row was not returned");
    return { id: row[0], user: userName, token };
  }

  return {
    issue: (userName) => client.begin((tx) => issueIn(tx, userName)),

    async authenticate(token) {
      const row = await lookups.add(hashToken(token));
      if (!row) return undefined;
      const [, tokenId, userId, lastUsedAt] = row;
      const now = clock();
      if (lastUsedAt === null || now - lastUsedAt.getTime() >= LAST_USED_GRANULARITY_MS) recordUse(tokenId, now);
      return { id: userId, tokenId };
    },

    // Every start but the first finds a token with one read and takes no lock. Instances starting
    // together on an empty database: the lock makes exactly one of them see no token and issue
    // the first one (tokens are never deleted, so a token once seen stays).
    async bootstrap() {
      if ((await rowsOf(client, TOKEN_SQL.anyToken)).length > 0) return undefined;
      return client.begin(async (tx) => {
        await tx.unsafe("SELECT pg_advisory_xact_lock($1)", [BOOTSTRAP_LOCK]);
        const [any] = await rowsOf(tx, TOKEN_SQL.anyToken);
        return any ? undefined : issueIn(tx, "admin");
      });
    },

    async list() {
      type Listed = [id: number, user: string, createdAt: Date, lastUsedAt: Date | null, revokedAt: Date | null];
      const rows = await rowsOf<Listed>(client, TOKEN_SQL.list);
      return rows.map(([id, user, createdAt, lastUsedAt, revokedAt]) => ({
        id,
        user,
        createdAt,
        lastUsedAt,
        revokedAt,
      }));
    },

    async revoke(tokenId) {
      const [revoked] = await rowsOf(client, TOKEN_SQL.revoke, [new Date(clock()).toISOString(), tokenId]);
      if (revoked) return "revoked";
      const [row] = await rowsOf(client, TOKEN_SQL.exists, [tokenId]);
      return row ? "already-revoked" : "not-found";
    },
  };
}
