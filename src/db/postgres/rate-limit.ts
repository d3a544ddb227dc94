import type { SQL } from "bun";
import type { RequestLimiter } from "../../core/stores";
import type { Clock } from "../../core/tokens";

/**
 * The per-token budget shared by every instance: the same token bucket as the in-memory limiter
 * (src/http/rate-limit.ts), kept in the UNLOGGED `rate_limits` table and taken from by one
 * statement, so concurrent checks from any instance count exactly. A refused check changes
 * nothing (the update's WHERE fails) and reads the bucket again for its Retry-After. The app's
 * clock is used, not the database's, so tests can move time; a clock that goes back never refills.
 */
export function createPostgresRateLimiter(client: SQL, perMinute: number, clock: Clock): RequestLimiter {
  if (perMinute === 0) return { take: async () => undefined };
  const rate = perMinute / 60_000;
  return {
    async take(key) {
      const now = clock();
      const taken = await client`
        INSERT INTO rate_limits AS bucket (key, tokens, updated_at)
        VALUES (${key}, ${perMinute - 1}, ${now})
        ON CONFLICT (key) DO UPDATE SET
          tokens = LEAST(${perMinute}::float8, bucket.tokens + GREATEST(0, ${now}::float8 - bucket.updated_at) * ${rate}::float8) - 1,
          updated_at = GREATEST(bucket.updated_at, ${now}::float8)
        WHERE LEAST(${perMinute}::float8, bucket.tokens + GREATEST(0, ${now}::float8 - bucket.updated_at) * ${rate}::float8) >= 1
        RETURNING 1 AS ok`;
      if (taken.length > 0) return undefined;
      const [bucket] = (await client`SELECT tokens, updated_at FROM rate_limits WHERE key = ${key}`) as Array<{
        tokens: number;
        updated_at: number;
      }>;
      const tokens = bucket ? Math.min(perMinute, bucket.tokens + Math.max(0, now - bucket.updated_at) * rate) : 0;
      return Math.max(1, Math.ceil((1 - tokens) / rate / 1000));
    },
  };
}
