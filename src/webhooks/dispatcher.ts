import { type FaultLog, faultDetail } from "../core/fault";
import type { ClaimedDelivery, WebhookStore } from "../core/stores";
import type { AttemptResult as MetricResult } from "../ops/metrics";
import { ATTEMPT_TIMEOUT_MS, LEASE_MS, outcomeOf, POLL_MS, WAKE_SPACING_MS } from "./rules";

import { type Resolver, sendAttempt } from "./send";
import { signedHeaders } from "./signing";

export interface DispatcherMetrics {
  webhookAttempt(result: MetricResult, seconds: number): void;
  setWebhooksPending(value: number): void;
}

export interface DispatcherOptions {
  store: WebhookStore;
  retryDelaysMs: readonly number[];
  allowPrivate: boolean;
  log: FaultLog;
  metrics: DispatcherMetrics;
  /** How often due deliveries are looked for when nothing wakes the dispatcher. */
  pollMs?: number;
  /** Attempts in flight at once; a hanging receiver holds one slot for at most the timeout. */
  concurrency?: number;
  timeoutMs?: number;
  resolve?: Resolver;
  clock?: () => number;
  random?: () => number;
  /** How often the pending gauge is read: counting grows with the outbox, so never on a scrape. */
  pendingEveryMs?: number;
}

/**
 * Sends due deliveries in the background: claims a batch (a lease, so other instances skip
 * it), makes each attempt with its own timeout, records it. Nothing here is on a request's
 * path: a create only wakes it, and a slow or dead receiver holds only its own slot.
 *
 * Failures of the database are logged once per streak and retried at the next poll; an attempt
 * whose record fails is made again when its lease ends (at-least-once).
 */
export function createDispatcher({
  store,
  retryDelaysMs,
  allowPrivate,
  log,
  metrics,
  pollMs = POLL_MS,
  concurrency = 128,
  timeoutMs = ATTEMPT_TIMEOUT_MS,
  resolve,
  clock = Date.now,
  random = Math.random,
  pendingEveryMs = 5_000,
}: DispatcherOptions) {
  let inFlight = 0;
  let running = false;
  let again = false;
  let stopped = true;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastTickAt = Number.NEGATIVE_INFINITY;
  let pendingReadAt = Number.NEGATIVE_INFINITY;
  let failing = false;
  const idle: Array<() => void> = [];
  /** Settles when the tick under way ends: a claim it is waiting for launches its batch then. */
  let ticking: Promise<void> | undefined;

  function schedule(delayMs: number) {
    if (stopped) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(tick, delayMs);
  }

  function noteFailure(what: string, error: unknown) {
    if (stopped || failing) return;
    failing = true;
    log(`webhook dispatcher: ${what} failed; retrying at the next poll`, faultDetail(error));
  }

  async function attempt(delivery: ClaimedDelivery) {
    const number = delivery.attempts + 1;
    const at = clock();
    const headers = signedHeaders(delivery.secret, delivery.id, Math.floor(at / 1000), delivery.payload);
    const result = await sendAttempt({
      url: delivery.url,
      body: delivery.payload,
      headers,
      timeoutMs,
      allowPrivate,
      resolve,
    });
    const { outcome, retryInMs } = outcomeOf(result, number, retryDelaysMs, random);
    try {
      await store.recordAttempt({
        deliverySeq: delivery.seq,
        attempt: number,
        at,
        statusCode: result.status,
        durationMs: result.durationMs,
        error: result.error,
        outcome,
        retryInMs,
      });
      metrics.webhookAttempt(outcome === "pending" ? "retried" : outcome, result.durationMs / 1000);
    } catch (error) {
      noteFailure("recording an attempt", error);
    }
  }

  async function refreshPending() {
    if (clock() - pendingReadAt < pendingEveryMs) return;
    pendingReadAt = clock();
    metrics.setWebhooksPending(await store.pendingCount());
  }

  async function tick() {
    timer = undefined;
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    let tickEnded = () => {};
    ticking = new Promise<void>((resolve) => {
      tickEnded = resolve;
    });
    lastTickAt = performance.now();
    try {
      while (!stopped && inFlight < concurrency) {
        const room = concurrency - inFlight;
        const batch = await store.claimDue(room, LEASE_MS);
        failing = false;
        for (const delivery of batch) {
          inFlight++;
          void attempt(delivery).finally(settled);
        }
        if (batch.length < room) break;
      }
      await refreshPending();
    } catch (error) {
      noteFailure("claiming due deliveries", error);
    } finally {
      running = false;
      ticking = undefined;
      tickEnded();
      if (again) {
        again = false;
        wake();
      } else schedule(pollMs);
    }
  }

  function settled() {
    inFlight--;
    if (inFlight === 0) for (const done of idle.splice(0)) done();
    // A full batch may have left due deliveries behind: a freed slot looks for them.
    if (inFlight === concurrency - 1) wake();
  }

  /** Looks for due deliveries soon: a plant was created, or a slot came free. */
  function wake() {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    schedule(Math.max(0, WAKE_SPACING_MS - (performance.now() - lastTickAt)));
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      schedule(0);
    },
    wake,
    /**
     * Claims no more, and waits for the attempts in flight to be recorded, at most `graceMs`;
     * one still in flight then is made again by whichever instance claims it after its lease.
     * A claim already under way is waited for too: the batch it returns is sent, and waited for
     * like the rest. Resolves once nothing is in flight or the grace is over.
     */
    async stop(graceMs = timeoutMs): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      let expire: ReturnType<typeof setTimeout> | undefined;
      const over = new Promise<void>((done) => {
        expire = setTimeout(done, graceMs);
      });
      if (ticking) await Promise.race([ticking, over]);
      if (inFlight > 0) await Promise.race([new Promise<void>((done) => idle.push(done)), over]);
      clearTimeout(expire);
    },
    /** Attempts in flight now (tests and shutdown). */
    inFlight: () => inFlight,
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
