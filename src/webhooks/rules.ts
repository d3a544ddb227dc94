import type { DeliveryStatus } from "../core/stores";

/** A receiver's answer must come within this (SPEC: "a 2xx answer within 10 s"). */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** An address that never answers frees its slot sooner. */
export const CONNECT_TIMEOUT_MS = 3_000;
/** Attempts in flight at once; a hanging receiver holds one slot for at most the timeout. */
export const CONCURRENCY = 128;
/** Dispatcher slots one endpoint holds at most, however many deliveries it has or however long it hangs. */
export const PER_ENDPOINT = 4;
/** Deliveries claimed per slot of an endpoint: the next starts when one ends, without a claim between. */
export const CLAIMED_AHEAD = 16;
// The circuit (kept in the database for every instance): after CIRCUIT_FAILURES failures in a row
// an endpoint rests CIRCUIT_REST_MS, then takes one attempt at a time until a 2xx closes it.
export const CIRCUIT_FAILURES = 5;
export const CIRCUIT_REST_MS = 30_000;
/** Deliveries share the API's thread (docs/decisions/0008-webhook-budget.md, docs/decisions/0012-webhook-throughput.md). */
export const ATTEMPTS_PER_SECOND = 1_200;
/**
 * Twice the longest attempt, so each attempt is normally made once, and short enough that one cut
 * off by a crash is due again within SPEC's 30 s of a restart. A later record means at-least-once.
 */
export const LEASE_MS = 20_000;
export const POLL_MS = 1_000;
/** How long a stopping dispatcher waits for the releases of what it let go of, whatever is left of its grace. */
export const RELEASE_WAIT_MS = 1_000;
/** A burst of creates costs one claim each 25 ms. */
export const WAKE_SPACING_MS = 25;

export function outcomeOf(
  result: { status?: number; retryAfterMs?: number },
  attempt: number,
  delays: readonly number[],
  random: () => number,
): { outcome: DeliveryStatus; retryInMs: number | undefined } {
  const status = result.status;
  if (status !== undefined && status >= 200 && status < 300) return { outcome: "delivered", retryInMs: undefined };
  // 410 Gone: the receiver asks for no more; the endpoint is disabled with it (the attempt trigger).
  const base = status === 410 ? undefined : delays[attempt - 1];
  if (base === undefined) return { outcome: "failed", retryInMs: undefined };
  // The configured delay ±10 %, never less than Retry-After asked.
  const jittered = Math.round(base * (0.9 + 0.2 * random()));
  return { outcome: "pending", retryInMs: Math.max(jittered, result.retryAfterMs ?? 0) };
}
