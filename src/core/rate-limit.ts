import type { Clock } from "./tokens";

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/** Past this many keys, buckets that have refilled are dropped: they hold nothing a full one lacks. */
const SWEEP_ABOVE_KEYS = 10_000;

/**
 * A token bucket per key: `perMinute` events a minute on average, with bursts of up to a
 * minute's worth; `perMinute` 0 turns it off. Keys are token ids (requests per token) or client
 * addresses (failed authentications per address), so the map is swept to stay bounded.
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

  const secondsUntilOne = (bucket: Bucket) => Math.max(1, Math.ceil((1 - bucket.tokens) / refillPerMs / 1000));

  function sweep() {
    for (const key of buckets.keys()) if (refilled(key).tokens >= perMinute) buckets.delete(key);
  }

  return {
    /**
     * Counts one event. Returns undefined when it may go ahead, else the whole seconds after
     * which it may be retried.
     */
    take(key: number | string): number | undefined {
      if (perMinute === 0) return undefined;
      const bucket = refilled(key);
      if (!buckets.has(key)) {
        if (buckets.size >= SWEEP_ABOVE_KEYS) sweep();
        buckets.set(key, bucket);
      }
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return undefined;
      }
      return secondsUntilOne(bucket);
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
