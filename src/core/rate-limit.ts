import type { Clock } from "./tokens";

export interface RateAnswer {
  refused: boolean;
  /** Events a minute (the policy's quota). */
  limit: number;
  remaining: number;
  /** Whole seconds until an event is allowed again: 0 while `remaining` > 0. */
  resetSeconds: number;
}

/** The answer for a bucket holding `level` tokens (after this event's), refilling `refillPerMs`. */
export function rateAnswer(refused: boolean, limit: number, level: number, refillPerMs: number): RateAnswer {
  const remaining = Math.max(0, Math.floor(level));
  const resetSeconds = remaining > 0 ? 0 : Math.max(1, Math.ceil((1 - level) / refillPerMs / 1000));
  return { refused, limit, remaining, resetSeconds };
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** Past this many keys, buckets that have refilled are dropped: they hold nothing a full one lacks. */
const SWEEP_ABOVE_KEYS = 10_000;

/**
 * A token bucket per key: `perMinute` a minute, bursts of a minute's worth; 0 turns it off. Keys
 * may be client addresses (failed authentications), so the map is swept to stay bounded.
 */
export function createRateLimiter(perMinute: number, clock: Clock) {
  const buckets = new Map<number | string, Bucket>();
  const refillPerMs = perMinute / 60_000;

  function refilled(key: number | string): Bucket {
    const now = clock();
    const bucket = buckets.get(key) ?? { tokens: perMinute, updatedAt: now };
    bucket.tokens = Math.min(perMinute, bucket.tokens + (now - bucket.updatedAt) * refillPerMs);
    bucket.updatedAt = now;
    return bucket;
  }

  function sweep() {
    for (const key of buckets.keys()) if (refilled(key).tokens >= perMinute) buckets.delete(key);
  }

  return {
    take(key: number | string): RateAnswer | undefined {
      if (perMinute === 0) return undefined;
      const bucket = refilled(key);
      if (!buckets.has(key)) {
        if (buckets.size >= SWEEP_ABOVE_KEYS) sweep();
        buckets.set(key, bucket);
      }
      const refused = bucket.tokens < 1;
      if (!refused) bucket.tokens -= 1;
      return rateAnswer(refused, perMinute, bucket.tokens, refillPerMs);
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
