import type { ClaimedDelivery, ClaimRequest } from "../core/stores";
import { ATTEMPTS_PER_SECOND, CIRCUIT_FAILURES, CIRCUIT_REST_MS, LEASE_MS, PER_ENDPOINT } from "./rules";

/** The fairness rules and the budget (src/webhooks/rules.ts); tests shorten them. */
export interface Fairness {
  perEndpoint: number;
  circuit: ClaimRequest["circuit"];
  attemptsPerSecond: number;
}

export const FAIRNESS: Fairness = {
  perEndpoint: PER_ENDPOINT,
  circuit: { failures: CIRCUIT_FAILURES, restMs: CIRCUIT_REST_MS },
  attemptsPerSecond: ATTEMPTS_PER_SECOND,
};

/**
 * What the dispatcher's next claim may ask for: this instance's attempts in flight by endpoint,
 * and a token bucket of attempts (up to `attemptsPerSecond` at once, refilled at that rate), so
 * however many deliveries are due, attempts take a bounded share of the API's thread.
 */
export function claimPlanner({ perEndpoint, circuit, attemptsPerSecond }: Fairness, clock: () => number) {
  const busy = new Map<number, number>();
  let tokens = attemptsPerSecond;
  let refilledAt = clock();
  const refill = () => {
    const now = clock();
    tokens = Math.min(attemptsPerSecond, tokens + (Math.max(0, now - refilledAt) * attemptsPerSecond) / 1000);
    refilledAt = now;
  };
  return {
    /** The claim for `room` free slots, or, when the budget has none left, how long until it has one. */
    next(room: number): ClaimRequest | { waitMs: number } {
      refill();
      const count = Math.min(room, Math.floor(tokens));
      if (count > 0) return { count, leaseMs: LEASE_MS, perEndpoint, busy, circuit };
      return { waitMs: Math.max(1, Math.ceil(((1 - tokens) * 1000) / attemptsPerSecond)) };
    },
    claimed(delivery: ClaimedDelivery) {
      tokens--;
      busy.set(delivery.webhookId, (busy.get(delivery.webhookId) ?? 0) + 1);
    },
    settled(delivery: ClaimedDelivery) {
      const left = (busy.get(delivery.webhookId) ?? 1) - 1;
      if (left > 0) busy.set(delivery.webhookId, left);
      else busy.delete(delivery.webhookId);
    },
  };
}
