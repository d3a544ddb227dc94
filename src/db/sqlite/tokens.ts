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
import { TOKEN_SQL } from "./queries";
import type { Writer } from "./writer";

type Millis = number | null;
const dateOf = (millis: Millis) => (millis === null ? null : new Date(millis));

/** A token's last use is recorded beside the request: a read must not fail on a full disk or a held lock. */
export function createSqliteTokenStore(sqlite: Database, writes: Writer, clock: Clock = Date.now): TokenStore {
  const findActive = sqlite.prepare<unknown, [string]>(TOKEN_SQL.findActive);
  const revokedAt = sqlite.prepare<unknown, [number]>(TOKEN_SQL.revokedAt);
  const list = sqlite.prepare<unknown, []>(TOKEN_SQL.list);
  const anyToken = sqlite.prepare<unknown, []>(TOKEN_SQL.anyToken);
  const valid = sqlite.prepare<{ id: number }, [string]>(TOKEN_SQL.valid);

  /** One write per token at a time, however many requests come meanwhile. */
  const recording = new Set<number>();

  function recordUse(tokenId: number, now: number) {
    if (recording.has(tokenId)) return;
    recording.add(tokenId);
    writes
      .run({ sql: TOKEN_SQL.touch, mode: "run", params: [now, tokenId] }, { bookkeeping: true })
      .catch(() => {})
      .finally(() => recording.delete(tokenId));
  }

  /** Both writes go in the same group: the token's finds the user just created. */
  async function issue(userName: string, first = false): Promise<IssuedToken | undefined> {
    if (!isValidUserName(userName)) throw new Error(`user name ${USER_NAME_RULE}`);
    const now = clock();
    const token = generateToken();
    const [userSql, tokenSql] = first
      ? [TOKEN_SQL.bootstrapUser, TOKEN_SQL.bootstrapToken]
      : [TOKEN_SQL.insertUser, TOKEN_SQL.insertToken];
    const [, row] = await Promise.all([
      writes.run({ sql: userSql, mode: "run", params: [userName, now] }),
      writes.run<{ id: number } | null>({ sql: tokenSql, mode: "get", params: [userName, hashToken(token), now] }),
    ]);
    return row ? { id: row.id, user: userName, token } : undefined;
  }

  return {
    async issue(userName) {
      const issued = await issue(userName);
      if (!issued) throw new Error("the token row was not returned");
      return issued;
    },

    authenticate(token) {
      const row = findActive.values(hashToken(token))[0] as [number, number, Millis] | undefined;
      if (!row) return undefined;
      const [tokenId, userId, lastUsedAt] = row;
      const now = clock();
      if (lastUsedAt === null || now - lastUsedAt >= LAST_USED_GRANULARITY_MS) recordUse(tokenId, now);
      return { id: userId, tokenId };
    },

    // Read first: every start but the very first writes nothing.
    bootstrap: async () => (anyToken.get() ? undefined : issue("admin", true)),
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
      const revoked = await writes.run({ sql: TOKEN_SQL.revoke, mode: "get", params: [clock(), tokenId] });
      if (revoked) return "revoked";
      const [row] = revokedAt.values(tokenId) as Array<[Millis]>;
      return row ? "already-revoked" : "not-found";
    },

    stillValid: async (tokenIds) => new Set(valid.all(JSON.stringify(tokenIds)).map((row) => row.id)),
  };
}
