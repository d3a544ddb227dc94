/**
 * Load tokens for a service with its default per-token rate limit on, whatever the engine:
 * how many per user the bench needs, and issuing them through the service's own stores
 * (src/db/open.ts) on a side's database (one CLI start-up per token would take minutes).
 */
import { Database } from "bun:sqlite";
import { loadConfig } from "../src/config";
import { generateToken, hashToken } from "../src/core/tokens";
import { openStores } from "../src/db/open";
import { BARE_SCHEMA } from "./baseline/db";
import { ROUNDS, SECONDS, TOKENS } from "./options";
import type { LoadTokens } from "./rounds";
import { SCENARIOS } from "./rounds";
import { DEFAULT_RATE_LIMIT } from "./targets";
import { UPDATE_LOOP_RUNS } from "./update";

/** Load tokens per user at most. */
const MAX_TOKENS_PER_USER = 500;

/**
 * Load tokens per user for the whole bench at `rps` (a warm-up's): the limited contenders on one
 * limiter (one process's on SQLite, one database's on PostgreSQL) ask `limitedLoad` × rps while
 * they run, twice that for safety; a token gives a minute's worth at once and a minute's worth a
 * minute over the bench's whole length (`contenders` runs back to back). BENCH_TOKENS overrides.
 */
export function tokensPerUser(rps: number, { limitedLoad, contenders }: { limitedLoad: number; contenders: number }) {
  if (TOKENS !== undefined) return TOKENS;
  // The round scenarios, then the update loop (bench/update.ts) on the service sides.
  const runs = (SCENARIOS.length + UPDATE_LOOP_RUNS) * ROUNDS;
  const demand = 2 * limitedLoad * rps * SECONDS * runs;
  const perToken = DEFAULT_RATE_LIMIT * (1 + (contenders * runs * SECONDS) / 60);
  return Math.min(MAX_TOKENS_PER_USER, Math.max(2, Math.ceil(demand / perToken / 2)));
}

/** `perUser` tokens for each of bench-a and bench-b on `database` (a DATABASE_URL), issued by the service's token store. */
export async function issueLoadTokens(database: string, perUser: number): Promise<LoadTokens> {
  const stores = await openStores(loadConfig({ DATABASE_URL: database }), () => {});
  try {
    const issue = async (user: string) => {
      const tokens: string[] = [];
      for (let i = 0; i < perUser; i++) tokens.push((await stores.tokens.issue(user)).token);
      return tokens;
    };
    return { a: await issue("bench-a"), b: await issue("bench-b") };
  } finally {
    await stores.close();
  }
}

/**
 * The bare floor's users and tokens (its plain schema has no migrations for the CLI to find):
 * written straight into its file, the schema made first. One token per user for the checks and
 * `perUser` more for the load, as issueLoadTokens gives the others.
 */
export function bareFloorTokens(path: string, perUser: number): { pair: [string, string]; load: LoadTokens } {
  const sqlite = new Database(path, { create: true, strict: true });
  try {
    for (const statement of BARE_SCHEMA) sqlite.run(statement);
    const addUser = sqlite.prepare<{ id: number }, [string]>("INSERT INTO users (name) VALUES (?) RETURNING id");
    const addToken = sqlite.prepare("INSERT INTO tokens (user_id, hash, created_at) VALUES (?, ?, ?)");
    const issue = (user: string, count: number) => {
      const id = addUser.get(user)?.id as number;
      return Array.from({ length: count }, () => {
        const token = generateToken();
        addToken.run(id, hashToken(token), Date.now());
        return token;
      });
    };
    const [a, ...loadA] = issue("bench-a", perUser + 1);
    const [b, ...loadB] = issue("bench-b", perUser + 1);
    return { pair: [a as string, b as string], load: { a: loadA, b: loadB } };
  } finally {
    sqlite.close();
  }
}
