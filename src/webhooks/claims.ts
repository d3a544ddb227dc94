import type { ClaimRequest } from "../core/stores";
import { ATTEMPTS_PER_SECOND, CIRCUIT_FAILURES, CIRCUIT_REST_MS, LEASE_MS, PER_ENDPOINT } from "./rules";

/** src/webhooks/rules.ts; tests shorten them. */
export const FAIRNESS = {
  perEndpoint: PER_ENDPOINT,
  circuit: { failures: CIRCUIT_FAILURES, restMs: CIRCUIT_REST_MS },
  attemptsPerSecond: ATTEMPTS_PER_SECOND,
};
export type Fairness = typeof FAIRNESS;

/** The dispatcher's next claim, within a token bucket of attempts per second. */
export function claimPlanner({ perEndpoint, circuit, attemptsPerSecond }: Fairness, clock: () => number) {
  let tokens = attemptsPerSecond;
  let refilledAt = clock();
  const refill = () => {
    const now = clock();
    tokens = Math.min(attemptsPerSecond, tokens + (Math.max(0, now - refilledAt) * attemptsPerSecond) / 1000);
    refilledAt = now;
  };
  return {
    /** The claim for `room` free slots, or how long until the budget has one. */
    next(room: number): Omit<ClaimRequest, "busy"> | { waitMs: number } {
      refill();
      const count = Math.min(room, Math.floor(tokens));
      if (count > 0) return { count, leaseMs: LEASE_MS, perEndpoint, circuit };
      return { waitMs: Math.max(1, Math.ceil(((1 - tokens) * 1000) / attemptsPerSecond)) };
    },
    /** `count` claimed; a negative count gives back what was let go of unattempted. */
    claimed(count: number) {
      tokens = Math.min(attemptsPerSecond, tokens - count);
    },
  };
}
