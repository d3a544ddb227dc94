import type { Database } from "bun:sqlite";
import type { TokenStore } from "../../core/stores";
import {
  type Clock,
  generateToken,
  hashToken,
  type IssuedToken,
  isValidUserName,
  LAST_USED_GRANULARITY_MS,
  USER_NAME_RULE,
} from "../../core/tokens";
import type { GroupCommit } from "./group-commit";
import { TOKEN_SQL } from "./queries";

type Millis = number | null;
const dateOf = (millis: Millis) => (millis === null ? null : new Date(millis));

/**
 * Tokens and their users on SQLite. Every write goes through group commit; recording a token's
 * last use is bookkeeping done beside the request, never a write the request waits for or fails
 * on: a read must not fail because the disk is full or another process holds the write lock.
 */
export function createSqliteTokenStore(sqlite: Database, commit: GroupCommit, clock: Clock = Date.now): TokenStore {
  const findActive = sqlite.prepare<unknown, [string]>(TOKEN_SQL.findActive);
  const anyToken = sqlite.prepare<unknown, []>(TOKEN_SQL.anyToken);
  const insertUser = sqlite.prepare<unknown, [string, number]>(TOKEN_SQL.insertUser);
  const userByName = sqlite.prepare<unknown, [string]>(TOKEN_SQL.userByName);
  const insertToken = sqlite.prepare<unknown, [number, string, number]>(TOKEN_SQL.insertToken);
  const touch = sqlite.prepare<unknown, [number, number]>(TOKEN_SQL.touch);
  const revokedAt = sqlite.prepare<unknown, [number]>(TOKEN_SQL.revokedAt);
  const revoke = sqlite.prepare<unknown, [number, number]>(TOKEN_SQL.revoke);
  const list = sqlite.prepare<unknown, []>(TOKEN_SQL.list);

  /** Tokens whose last use is being recorded: one write each, however many requests come meanwhile. */
  const recording = new Set<number>();

  function recordUse(tokenId: number, now: number) {
    if (recording.has(tokenId)) return;
    recording.add(tokenId);
    commit
      .run(() => touch.run(now, tokenId), { bookkeeping: true })
      .catch(() => {})
      .finally(() => recording.delete(tokenId));
  }

  /** Inside a transaction: the user is created when new, then given a token. */
  function issueWithin(userName: string): IssuedToken {
    if (!isValidUserName(userName)) throw new Error(`user name ${USER_NAME_RULE}`);
    const now = clock();
    const token = generateToken();
    insertUser.run(userName, now);
    const [user] = userByName.values(userName) as Array<[number]>;
    if (!user) throw new Error("user vanished while issuing a token");
    const [row] = insertToken.values(user[0], hashToken(token), now) as Array<[number]>;
    if (!row) throw new Error("the token row was not returned");
    return { id: row[0], user: userName, token };
  }

  // Within group commit's transaction each of these is a savepoint: it fails alone.
  const issue = sqlite.transaction(issueWithin);
  const bootstrap = sqlite.transaction(() => (anyToken.values().length > 0 ? undefined : issueWithin("admin")));

  return {
    issue: (userName) => commit.run(() => issue(userName)),

    async authenticate(token) {
      const row = findActive.values(hashToken(token))[0] as [number, number, Millis] | undefined;
      if (!row) return undefined;
      const [tokenId, userId, lastUsedAt] = row;
      const now = clock();
      if (lastUsedAt === null || now - lastUsedAt >= LAST_USED_GRANULARITY_MS) recordUse(tokenId, now);
      return { id: userId, tokenId };
    },

    bootstrap: () => commit.run(() => bootstrap()),

    async list() {
      const rows = list.values() as Array<[number, string, number, Millis, Millis]>;
      return rows.map(([id, user, createdAt, lastUsedAt, revokedAt]) => ({
        id,
        user,
        createdAt: new Date(createdAt),
        lastUsedAt: dateOf(lastUsedAt),
        revokedAt: dateOf(revokedAt),
      }));
    },

    async revoke(tokenId) {
      return commit.run(() => {
        const [row] = revokedAt.values(tokenId) as Array<[Millis]>;
        if (!row) return "not-found";
        if (row[0] !== null) return "already-revoked";
        revoke.run(clock(), tokenId);
        return "revoked";
      });
    },
  };
}
