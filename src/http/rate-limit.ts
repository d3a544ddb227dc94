import type { Clock } from "../auth/tokens";

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * A token bucket per key: `perMinute` requests a minute on average, with bursts of up to a
 * minute's worth. Returns undefined when the request may go ahead, else the whole seconds
 * after which it may be retried.
 */
export function createRateLimiter(perMinute: number, clock: Clock) {
  const buckets = new Map<number, Bucket>();
  const refillPerMs = perMinute / 60_000;

  return {
    take(key: number): number | undefined {
      if (perMinute === 0) return undefined;
      const now = clock();
      const bucket = buckets.get(key) ?? { tokens: perMinute, updatedAt: now };
      bucket.tokens = Math.min(perMinute, bucket.tokens + (now - bucket.updatedAt) * refillPerMs);
      bucket.updatedAt = now;
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return undefined;
      }
      return Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / 1000));
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
