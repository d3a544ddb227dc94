import { type FaultLog, faultDetail } from "../core/fault";
import type { ClaimedDelivery, WebhookStore } from "../core/stores";
import type { Metrics } from "../ops/metrics";
import { claimPlanner, FAIRNESS, type Fairness } from "./claims";
import type { FanOut } from "./fan-out";
import { ATTEMPT_TIMEOUT_MS, CLAIMED_AHEAD, CONCURRENCY, outcomeOf, POLL_MS, WAKE_SPACING_MS } from "./rules";
import { sendAttempt } from "./send";
import { signedHeaders } from "./signing";
import { waitingDeliveries } from "./waiting";

export interface DispatcherOptions {
  store: WebhookStore;
  /** Writes the deliveries of new changes before each claim. */
  fanOut: Pick<FanOut, "due">;
  retryDelaysMs: readonly number[];
  allowPrivate: boolean;
  log: FaultLog;
  metrics: Pick<Metrics, "webhookAttempt" | "setWebhooksPending">;
  pollMs?: number;
  fairness?: Partial<Fairness>;
  timeoutMs?: number;
  clock?: () => number;
  /** How often the pending gauge is read: counting grows with the outbox. */
  pendingEveryMs?: number;
}

/**
 * Sends due deliveries in the background: claims a leased batch fairly, attempts and records each.
 * Database failures are logged once per streak; an attempt whose record fails goes again after its lease.
 */
export function createDispatcher({
  store,
  fanOut,
  retryDelaysMs,
  allowPrivate,
  log,
  metrics,
  pollMs = POLL_MS,
  fairness,
  timeoutMs = ATTEMPT_TIMEOUT_MS,
  clock = Date.now,
  pendingEveryMs = 5_000,
}: DispatcherOptions) {
  let inFlight = 0;
  const rules = { ...FAIRNESS, ...fairness };
  const waiting = waitingDeliveries(rules.perEndpoint);
  const claims = claimPlanner(rules, clock);
  let again = false;
  let stopped = true;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timerAt = 0;
  let lastTickAt = Number.NEGATIVE_INFINITY;
  let pendingReadAt = Number.NEGATIVE_INFINITY;
  let failing = false;
  const idle: Array<() => void> = [];
  let ticking: Promise<void> | undefined;
  /** Endpoints let go of since the claim under way began: what that claim takes of them is let go of too. */
  const lettingGo = new Set<number>();
  /** Set once stop() has returned: a claim landing after it starts nothing. */
  let over = false;

  function schedule(delayMs: number) {
    const at = performance.now() + delayMs;
    // A tick due as soon serves this call too: every logged change wakes the dispatcher.
    if (stopped || (timer && timerAt <= at)) return;
    clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(tick, delayMs);
  }

  function noteFailure(what: string, error: unknown) {
    if (stopped || failing) return;
    failing = true;
    log(`webhook dispatcher: ${what} failed; retrying at the next poll`, faultDetail(error));
  }

  /** Signs, sends and records one attempt; whether it was delivered. Throws only when recording fails. */
  async function attemptOnce(delivery: ClaimedDelivery): Promise<boolean> {
    const attempt = delivery.attempts + 1;
    const at = clock();
    const { url, payload: body } = delivery;
    const headers = signedHeaders(delivery.secret, delivery.id, Math.floor(at / 1000), body);
    const result = await sendAttempt({ url, body, headers, timeoutMs, allowPrivate });
    const { outcome, retryInMs } = outcomeOf(result, attempt, retryDelaysMs, Math.random);
    const { status: statusCode, durationMs, error } = result;
    const record = { deliverySeq: delivery.seq, attempt, at, statusCode, durationMs, error, outcome, retryInMs };
    await store.recordAttempt(record);
    metrics.webhookAttempt(outcome === "pending" ? "retried" : outcome, durationMs / 1000);
    return outcome === "delivered";
  }

  async function tick() {
    timer = undefined;
    if (stopped) return;
    if (ticking) {
      again = true;
      return;
    }
    const { promise, resolve: tickEnded } = Promise.withResolvers<void>();
    ticking = promise;
    lastTickAt = performance.now();
    let nextMs = pollMs;
    try {
      await fanOut.due(rules.circuit.failures);
      for (const endpoint of waiting.stale()) letGo(endpoint);
      const most = CONCURRENCY * CLAIMED_AHEAD;
      while (!stopped && inFlight < CONCURRENCY && inFlight + waiting.count() < most) {
        const request = claims.next(most - inFlight - waiting.count());
        if ("waitMs" in request) {
          nextMs = Math.min(pollMs, request.waitMs);
          break;
        }
        // An endpoint may have CLAIMED_AHEAD times its slots claimed: the next starts as one frees up.
        const perEndpoint = request.perEndpoint * CLAIMED_AHEAD;
        lettingGo.clear();
        const batch = await store.claimDue({ ...request, perEndpoint, ...waiting.holding(perEndpoint) });
        failing = false;
        claims.claimed(batch.length);
        // Oldest first, so an endpoint's first attempts go in seq order.
        for (const delivery of batch.sort((a, b) => a.seq - b.seq)) waiting.add(delivery);
        for (const endpoint of over ? waiting.endpoints() : lettingGo) letGo(endpoint);
        startWaiting();
        if (batch.length < request.count) break;
      }
      if (clock() - pendingReadAt >= pendingEveryMs) {
        pendingReadAt = clock();
        metrics.setWebhooksPending(await store.pendingCount());
      }
    } catch (error) {
      noteFailure("claiming due deliveries", error);
    } finally {
      ticking = undefined;
      tickEnded();
      if (again) {
        again = false;
        wake();
      } else schedule(nextMs);
    }
  }

  /** Lets go of an endpoint's waiting deliveries: due again now, budget given back (a failed release: their lease). */
  function letGo(endpoint: number) {
    lettingGo.add(endpoint);
    const release = (seqs: number[]) => {
      claims.claimed(-seqs.length);
      return store.release(seqs).catch((error) => noteFailure("releasing claims", error));
    };
    waiting.letGo(endpoint, release, wake);
  }

  const startWaiting = () => waiting.start(() => inFlight < CONCURRENCY, launch, letGo);

  function launch(delivery: ClaimedDelivery) {
    inFlight++;
    void attemptOnce(delivery)
      .catch((error) => noteFailure("recording an attempt", error) ?? false)
      .then((delivered) => settled(delivery, delivered));
  }

  /** An attempt that failed lets go of its endpoint's other claims: its circuit decides when it is tried again. */
  function settled(delivery: ClaimedDelivery, delivered: boolean) {
    inFlight--;
    waiting.ended(delivery);
    if (!delivered) letGo(delivery.webhookId);
    startWaiting();
    if (inFlight === 0 && waiting.count() === 0) for (const done of idle.splice(0)) done();
    // A slot came free, the dispatcher's or the endpoint's: due deliveries may be waiting for it.
    wake();
  }

  function wake() {
    if (ticking) again = true;
    else schedule(Math.max(0, WAKE_SPACING_MS - (performance.now() - lastTickAt)));
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      schedule(0);
    },
    wake,
    /** Claims no more, lets go of what waits, and waits up to `graceMs` for the claim and attempts under way. */
    async stop(graceMs = timeoutMs): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      for (const endpoint of waiting.endpoints()) letGo(endpoint);
      const { promise: graceOver, resolve: done } = Promise.withResolvers<void>();
      const expire = setTimeout(done, graceMs);
      if (ticking) await Promise.race([ticking, graceOver]);
      for (const endpoint of waiting.endpoints()) letGo(endpoint);
      if (inFlight > 0) await Promise.race([new Promise<void>((done) => idle.push(done)), graceOver]);
      clearTimeout(expire);
      // Not bounded by the grace: a drain that used it up still lets the releases commit, within their own bound.
      await waiting.releases();
      over = true;
    },
    inFlight: () => inFlight,
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
