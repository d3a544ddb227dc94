import type { SQL } from "bun";
import type { RequestLimiter } from "../../core/stores";
import type { Clock } from "../../core/tokens";
import { RATE_LIMIT_SQL } from "./queries";

/**
 * The per-token budget shared by every instance: the same token bucket as the in-memory limiter
 * (src/core/rate-limit.ts), kept in the UNLOGGED `rate_limits` table. A refused take reads the
 * bucket again for its Retry-After. The app's clock is used, not the database's, so tests can
 * move time; a clock that goes back never refills.
 */
export function createPostgresRateLimiter(client: SQL, perMinute: number, clock: Clock): RequestLimiter {
  if (perMinute === 0) return { take: async () => undefined };
  const rate = perMinute / 60_000;
  return {
    async take(key) {
      const now = clock();
      const taken = await client.unsafe(RATE_LIMIT_SQL.take, [key, perMinute, now, rate]);
      if (taken.length > 0) return undefined;
      const [bucket] = (await client.unsafe(RATE_LIMIT_SQL.bucket, [key])) as Array<{
        tokens: number;
        updatedAt: number;
      }>;
      const tokens = bucket ? Math.min(perMinute, bucket.tokens + Math.max(0, now - bucket.updatedAt) * rate) : 0;
      return Math.max(1, Math.ceil((1 - tokens) / rate / 1000));
    },
  };
}
