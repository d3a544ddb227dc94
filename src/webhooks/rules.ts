import type { DeliveryStatus } from "../core/stores";

/** A receiver's answer must come within this (SPEC: "a 2xx answer within 10 s"). */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** Within the 10 s, the connection must be up within this: an address that never answers frees its slot sooner. */
export const CONNECT_TIMEOUT_MS = 3_000;
/**
 * Attempts one instance has in flight to one endpoint: however many deliveries an endpoint has
 * queued, or however long it hangs, it holds at most this many of the dispatcher's slots.
 */
export const PER_ENDPOINT = 4;
/**
 * The circuit: an endpoint whose last CIRCUIT_FAILURES attempts all failed rests CIRCUIT_REST_MS
 * after the latest, its due deliveries waiting, then takes one attempt at a time (a probe) until
 * one is answered with a 2xx, which closes it. Kept in the database, so every instance sees it.
 */
export const CIRCUIT_FAILURES = 5;
export const CIRCUIT_REST_MS = 30_000;
/**
 * Attempts one instance starts per second at most, in bursts of up to as many: deliveries share
 * the API's thread, and this keeps their cost a small share of it (docs/decisions/0008-webhook-budget.md).
 */
export const ATTEMPTS_PER_SECOND = 200;
/**
 * How long a claimed delivery stays invisible to other claims: twice the longest attempt (10 s,
 * the address check included), so the attempt and its record normally end well inside it and
 * each attempt is made once; short enough that one cut off by a crash is due again well within
 * SPEC's 30 s of a restart. A record delayed past it (a database stalling for 10 s) can let
 * another instance make the attempt again: at-least-once, as receivers are told.
 */
export const LEASE_MS = 20_000;
/** How often the service looks for due deliveries when nothing wakes it (a redelivery waits this at most). */
export const POLL_MS = 1_000;
/** Wakes after a created plant come at most this often: a burst of creates costs one claim each 25 ms. */
export const WAKE_SPACING_MS = 25;

/** The wait before retry `n` (1-based): the configured delay ±10 %, and never less than Retry-After asked. */
export function retryDelay(
  delays: readonly number[],
  attempt: number,
  retryAfterMs: number | undefined,
  random: () => number,
): number | undefined {
  const base = delays[attempt - 1];
  if (base === undefined) return undefined;
  const jittered = Math.round(base * (0.9 + 0.2 * random()));
  return Math.max(jittered, retryAfterMs ?? 0);
}

/** What one attempt's result makes of its delivery, and when it is tried next. */
export function outcomeOf(
  result: { status?: number; retryAfterMs?: number },
  attempt: number,
  delays: readonly number[],
  random: () => number,
): { outcome: DeliveryStatus; retryInMs: number | undefined } {
  const status = result.status;
  if (status !== undefined && status >= 200 && status < 300) return { outcome: "delivered", retryInMs: undefined };
  // 410 Gone: the receiver asks for no more; the endpoint is disabled with it (the attempt trigger).
  if (status === 410) return { outcome: "failed", retryInMs: undefined };
  const retryInMs = retryDelay(delays, attempt, result.retryAfterMs, random);
  return retryInMs === undefined ? { outcome: "failed", retryInMs } : { outcome: "pending", retryInMs };
}
