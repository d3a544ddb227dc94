import type { Database } from "bun:sqlite";
import type { TokenListing, TokenStore } from "../../core/stores";
import {
  CLI_TOKEN,
  type Clock,
  FIRST_TOKEN,
  generateToken,
  hashToken,
  type IssuedToken,
  isValidUserName,
  MAX_TOKENS_PER_USER,
  type TokenSpec,
  USER_NAME_RULE,
} from "../../core/tokens";
import { tokenUsers } from "../tokens";
import { TOKEN_SQL } from "./queries";
import type { Writer } from "./writer";

type Millis = number | null;
/** A listed token, its times as SQLite keeps them (ms). */
type Row = Omit<TokenListing, "createdAt" | "expiresAt" | "lastUsedAt" | "revokedAt"> &
  Record<"expiresAt" | "lastUsedAt" | "revokedAt", Millis> & { createdAt: number };
const dateOf = (millis: Millis) => (millis === null ? null : new Date(millis));

export function createSqliteTokenStore(sqlite: Database, writes: Writer, clock: Clock = Date.now): TokenStore {
  const findActive = sqlite.prepare<unknown, [string]>(TOKEN_SQL.findActive);
  const revokedAt = sqlite.prepare<unknown, [number, number | null]>(TOKEN_SQL.revokedAt);
  const list = sqlite.prepare<Row, [number | null, number | null]>(TOKEN_SQL.list);
  const anyToken = sqlite.prepare<unknown, []>(TOKEN_SQL.anyToken);
  const valid = sqlite.prepare<{ id: number }, [string, number]>(TOKEN_SQL.valid);

  const userOf = tokenUsers(
    (tokenId, now) => writes.run({ sql: TOKEN_SQL.touch, mode: "run", params: [now, tokenId] }, { bookkeeping: true }),
    clock,
  );

  /** Both writes go in the same group: the token's finds the user just created. */
  async function issue(userName: string, spec: TokenSpec, first = false): Promise<IssuedToken | undefined> {
    if (!isValidUserName(userName)) throw new Error(`user name ${USER_NAME_RULE}`);
    const now = clock();
    const token = generateToken();
    const [userSql, tokenSql] = first
      ? [TOKEN_SQL.bootstrapUser, TOKEN_SQL.bootstrapToken]
      : [TOKEN_SQL.insertUser, TOKEN_SQL.insertToken];
    const params = [userName, hashToken(token), now, spec.name, spec.scopes, spec.expiresAt];
    const [, row] = await Promise.all([
      writes.run({ sql: userSql, mode: "run", params: [userName, now] }),
      writes.run<{ id: number } | null>({ sql: tokenSql, mode: "get", params }),
    ]);
    return row ? { id: row.id, user: userName, token } : undefined;
  }

  const listOf = (userId: number | null, tokenId: number | null = null) =>
    list.all(userId, tokenId).map((row) => ({
      ...row,
      createdAt: new Date(row.createdAt),
      expiresAt: dateOf(row.expiresAt),
      lastUsedAt: dateOf(row.lastUsedAt),
      revokedAt: dateOf(row.revokedAt),
    }));

  return {
    async issue(userName, spec = CLI_TOKEN) {
      const issued = await issue(userName, spec);
      if (!issued) throw new Error("the token row was not returned");
      return issued;
    },

    async create(userId, spec) {
      const now = clock();
      const token = generateToken();
      const params = [userId, hashToken(token), now, spec.name, spec.scopes, spec.expiresAt, MAX_TOKENS_PER_USER];
      const row = await writes.run<{ id: number } | null>({ sql: TOKEN_SQL.createToken, mode: "get", params });
      if (!row) return "too-many";
      const [created] = listOf(userId, row.id);
      if (!created) throw new Error("the new token's row was not found");
      return { ...created, token };
    },

    authenticate(token) {
      writes.snapshot();
      const row = findActive.values(hashToken(token))[0] as [number, number, Millis, number, Millis] | undefined;
      if (!row) return undefined;
      const [tokenId, userId, lastUsedAt, scopes, expiresAt] = row;
      return userOf({ tokenId, userId, scopes, expiresAt, lastUsedAt });
    },

    // Read first: every start but the very first writes nothing.
    bootstrap: async () => (anyToken.get() ? undefined : issue("admin", FIRST_TOKEN, true)),
    list: async (userId) => listOf(userId ?? null),

    async revoke(tokenId, userId) {
      const owner = userId ?? null;
      const revoked = await writes.run({ sql: TOKEN_SQL.revoke, mode: "get", params: [clock(), tokenId, owner] });
      if (revoked) return "revoked";
      const [row] = revokedAt.values(tokenId, owner) as Array<[Millis]>;
      return row ? "already-revoked" : "not-found";
    },

    stillValid: async (tokenIds) => new Set(valid.all(JSON.stringify(tokenIds), clock()).map((row) => row.id)),
  };
}
