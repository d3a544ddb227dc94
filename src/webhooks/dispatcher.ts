import { type FaultLog, faultDetail } from "../core/fault";
import type { ClaimedDelivery, WebhookStore } from "../core/stores";
import { type AttemptMetrics, attemptDelivery } from "./attempt";
import { claimPlanner, FAIRNESS, type Fairness } from "./claims";
import type { FanOut } from "./fan-out";
import { ATTEMPT_TIMEOUT_MS, POLL_MS, WAKE_SPACING_MS } from "./rules";
import type { Resolver } from "./send";

export interface DispatcherMetrics extends AttemptMetrics {
  setWebhooksPending(value: number): void;
}

export interface DispatcherOptions {
  store: WebhookStore;
  /** Writes the deliveries of new changes before each claim. */
  fanOut: Pick<FanOut, "due">;
  retryDelaysMs: readonly number[];
  allowPrivate: boolean;
  log: FaultLog;
  metrics: DispatcherMetrics;
  pollMs?: number;
  /** Attempts in flight at once; a hanging receiver holds one slot for at most the timeout. */
  concurrency?: number;
  fairness?: Partial<Fairness>;
  timeoutMs?: number;
  resolve?: Resolver;
  clock?: () => number;
  random?: () => number;
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
  concurrency = 128,
  fairness,
  timeoutMs = ATTEMPT_TIMEOUT_MS,
  resolve,
  clock = Date.now,
  random = Math.random,
  pendingEveryMs = 5_000,
}: DispatcherOptions) {
  let inFlight = 0;
  const rules = { ...FAIRNESS, ...fairness };
  const claims = claimPlanner(rules, clock);
  let running = false;
  let again = false;
  let stopped = true;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastTickAt = Number.NEGATIVE_INFINITY;
  let pendingReadAt = Number.NEGATIVE_INFINITY;
  let failing = false;
  const idle: Array<() => void> = [];
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

  const attemptOptions = { store, retryDelaysMs, allowPrivate, metrics, timeoutMs, resolve, clock, random };
  const attempt = (delivery: ClaimedDelivery) =>
    attemptDelivery(delivery, attemptOptions).catch((error) => noteFailure("recording an attempt", error));

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
    const { promise, resolve: tickEnded } = Promise.withResolvers<void>();
    ticking = promise;
    lastTickAt = performance.now();
    let nextMs = pollMs;
    try {
      await fanOut.due(rules.circuit.failures);
      while (!stopped && inFlight < concurrency) {
        const request = claims.next(concurrency - inFlight);
        if ("waitMs" in request) {
          nextMs = Math.min(pollMs, request.waitMs);
          break;
        }
        const batch = await store.claimDue(request);
        failing = false;
        // Oldest first, so one receiver's deliveries tend to come in creation order (not promised).
        for (const delivery of batch.sort((a, b) => a.seq - b.seq)) launch(delivery);
        if (batch.length < request.count) break;
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
      } else schedule(nextMs);
    }
  }

  function launch(delivery: ClaimedDelivery) {
    inFlight++;
    claims.claimed(delivery);
    void attempt(delivery).finally(() => settled(delivery));
  }

  function settled(delivery: ClaimedDelivery) {
    inFlight--;
    claims.settled(delivery);
    if (inFlight === 0) for (const done of idle.splice(0)) done();
    // A slot came free, the dispatcher's or the endpoint's: due deliveries may be waiting for it.
    wake();
  }

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
    /** Claims no more; waits up to `graceMs` for the claim and attempts under way (one cut off is redone after its lease). */
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
    inFlight: () => inFlight,
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;
