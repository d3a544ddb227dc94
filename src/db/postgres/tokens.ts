import type { SQL } from "bun";
import type { TokenListing, TokenStore } from "../../core/stores";
import {
  CLI_TOKEN,
  type Clock,
  FIRST_TOKEN,
  generateToken,
  hashToken,
  isValidUserName,
  MAX_TOKENS_PER_USER,
  type TokenSpec,
  USER_NAME_RULE,
} from "../../core/tokens";
import { tokenUsers } from "../tokens";
import { createGroups } from "./groups";
import { TOKEN_SQL } from "./queries";

/** The bootstrap's advisory lock key ("admin" in ASCII). */
const BOOTSTRAP_LOCK = 0x61646d696e;

type Runner = Pick<SQL, "unsafe">;

interface Found {
  hash: string;
  tokenId: number;
  userId: number;
  lastUsedAt: Date | null;
  scopes: number;
  expiresAt: Date | null;
}

const iso = (millis: number | null) => (millis === null ? null : new Date(millis).toISOString());

/** Every lookup reads the shared table, so a revoked token fails on every instance from its next request. */
export function createPostgresTokenStore(client: SQL, clock: Clock = Date.now): TokenStore {
  // Every request looks up: together they share one statement (docs/decisions/0002).
  const lookups = createGroups<string, Found | undefined>(async (group) => {
    const hashes = [...new Set(group.map((waiting) => waiting.item))];
    const rows = (await client.unsafe(TOKEN_SQL.findActive, [hashes.join(",")])) as Found[];
    const byHash = new Map(rows.map((row) => [row.hash, row]));
    for (const waiting of group) waiting.resolve(byHash.get(waiting.item));
  });
  const userOf = tokenUsers((tokenId, now) => client.unsafe(TOKEN_SQL.touch, [iso(now), tokenId]), clock);

  async function issueIn(tx: Runner, userName: string, spec: TokenSpec) {
    if (!isValidUserName(userName)) throw new Error(`user name ${USER_NAME_RULE}`);
    const now = new Date(clock()).toISOString();
    const token = generateToken();
    await tx.unsafe(TOKEN_SQL.insertUser, [userName, now]);
    const [user] = (await tx.unsafe(TOKEN_SQL.userByName, [userName])) as Array<{ id: number }>;
    if (!user) throw new Error("user vanished while issuing a token");
    const params = [user.id, hashToken(token), now, spec.name, spec.scopes, iso(spec.expiresAt)];
    const [row] = (await tx.unsafe(TOKEN_SQL.insertToken, params)) as Array<{ id: number }>;
    if (!row) throw new Error("the new token's row was not returned");
    return { id: row.id, user: userName, token };
  }

  return {
    issue: (userName, spec = CLI_TOKEN) => client.begin((tx) => issueIn(tx, userName, spec)),
    async create(userId, spec) {
      const token = generateToken();
      const now = new Date(clock()).toISOString();
      const params = [userId, hashToken(token), now, spec.name, spec.scopes, iso(spec.expiresAt), MAX_TOKENS_PER_USER];
      const [row] = (await client.begin(async (tx) => {
        await tx.unsafe(TOKEN_SQL.lockUser, [userId]);
        return tx.unsafe(TOKEN_SQL.createToken, params);
      })) as Array<{ id: number }>;
      if (!row) return "too-many";
      const [created] = (await client.unsafe(TOKEN_SQL.list, [userId, row.id])) as TokenListing[];
      if (!created) throw new Error("the new token's row was not found");
      return { ...created, token };
    },
    async authenticate(token) {
      const found = await lookups.add(hashToken(token));
      if (!found) return undefined;
      const { expiresAt, lastUsedAt } = found;
      return userOf({ ...found, expiresAt: expiresAt?.getTime() ?? null, lastUsedAt: lastUsedAt?.getTime() ?? null });
    },

    // A read first, so only the first start takes the lock; under it, one instance issues the first token.
    async bootstrap() {
      if ((await client.unsafe(TOKEN_SQL.anyToken)).length > 0) return undefined;
      return client.begin(async (tx) => {
        await tx.unsafe(TOKEN_SQL.bootstrapLock, [BOOTSTRAP_LOCK]);
        const [any] = await tx.unsafe(TOKEN_SQL.anyToken);
        return any ? undefined : issueIn(tx, "admin", FIRST_TOKEN);
      });
    },
    list: async (userId) => [...((await client.unsafe(TOKEN_SQL.list, [userId ?? null, null])) as TokenListing[])],
    async revoke(tokenId, userId) {
      const owner = userId ?? null;
      const [revoked] = await client.unsafe(TOKEN_SQL.revoke, [new Date(clock()).toISOString(), tokenId, owner]);
      if (revoked) return "revoked";
      const [row] = await client.unsafe(TOKEN_SQL.exists, [tokenId, owner]);
      return row ? "already-revoked" : "not-found";
    },

    async stillValid(tokenIds) {
      const now = new Date(clock()).toISOString();
      const rows = (await client.unsafe(TOKEN_SQL.valid, [tokenIds.join(","), now])) as Array<{ id: number }>;
      return new Set(rows.map((row) => row.id));
    },
  };
}
