import type { ClaimedDelivery } from "../core/stores";
import { LEASE_MS, RELEASE_WAIT_MS } from "./rules";

/**
 * Claimed deliveries waiting for their endpoint's slots, oldest first, and the attempts in flight per endpoint:
 * the next starts as a slot frees, without a claim between (docs/decisions/0012-webhook-throughput.md).
 */
export function waitingDeliveries(perEndpoint: number, now: () => number = () => performance.now()) {
  const waiting = new Map<number, Array<{ delivery: ClaimedDelivery; claimedAt: number }>>();
  /** Per endpoint, the attempts under way: seq → the delivery's attempts before this one. */
  const running = new Map<number, Map<number, number>>();
  /** Releases under way, by endpoint: until one commits, nothing of its endpoint is claimed (newer would come first). */
  const releasing = new Map<number, Promise<void>>();
  let count = 0;
  const waitingList = {
    count: () => count,
    endpoints: () => [...waiting.keys()],
    /** Endpoints whose oldest waiting delivery is past half its lease: it could not finish within it. */
    stale: () =>
      [...waiting].filter(([, list]) => now() - (list[0]?.claimedAt ?? now()) > LEASE_MS / 2).map(([e]) => e),
    add(delivery: ClaimedDelivery) {
      const list = waiting.get(delivery.webhookId) ?? [];
      list.push({ delivery, claimedAt: now() });
      waiting.set(delivery.webhookId, list);
      count++;
    },
    /**
     * The endpoint's waiting deliveries, taken out: those whose lease surely lasts (claimed under 3/4 of it ago);
     * the others are dropped, as their lease may have ended and another instance claimed them.
     */
    takeAll(endpoint: number): ClaimedDelivery[] {
      const list = waiting.get(endpoint) ?? [];
      waiting.delete(endpoint);
      count -= list.length;
      const since = now() - (LEASE_MS * 3) / 4;
      return list.filter(({ claimedAt }) => claimedAt > since).map(({ delivery }) => delivery);
    },
    /**
     * Those to start now, endpoints in turn, while `room()` and the endpoint's slots allow. One held past
     * half its lease could not finish within it: the endpoint's waiting ones are let go of, in order, instead.
     */
    start(room: () => boolean, launch: (delivery: ClaimedDelivery) => void, letGo: (endpoint: number) => void) {
      for (const [endpoint, list] of waiting) {
        while (list.length > 0 && room() && (running.get(endpoint)?.size ?? 0) < perEndpoint) {
          const { delivery, claimedAt } = list[0] as { delivery: ClaimedDelivery; claimedAt: number };
          if (now() - claimedAt > LEASE_MS / 2) {
            letGo(endpoint);
            break;
          }
          list.shift();
          count--;
          running.set(endpoint, (running.get(endpoint) ?? new Map()).set(delivery.seq, delivery.attempts));
          launch(delivery);
        }
        if (list.length === 0) waiting.delete(endpoint);
      }
    },
    /**
     * Lets go of the endpoint's waiting deliveries (takeAll's) through `release`, after its release before;
     * `released` once none is under way for it. `release` must not reject.
     */
    letGo(endpoint: number, release: (seqs: number[]) => Promise<void>, released: () => void) {
      const seqs = waitingList.takeAll(endpoint).map((delivery) => delivery.seq);
      if (seqs.length === 0) return;
      const done: Promise<void> = (releasing.get(endpoint) ?? Promise.resolve())
        .then(() => release(seqs))
        .finally(() => {
          if (releasing.get(endpoint) !== done) return;
          releasing.delete(endpoint);
          released();
        });
      releasing.set(endpoint, done);
    },
    /** The releases under way, for at most RELEASE_WAIT_MS. */
    releases: () =>
      Promise.race([Promise.all(releasing.values()), new Promise((done) => setTimeout(done, RELEASE_WAIT_MS).unref())]),
    /**
     * The claim's `busy` (per endpoint, its deliveries claimed and not settled; `full` while a release is under way)
     * and `held` (per endpoint, the last seq of the run of first attempts it holds).
     */
    holding(full: number) {
      const busy = new Map<number, number>();
      const held = new Map<number, number>();
      const hold = (endpoint: number, seq: number, attempts: number) => {
        busy.set(endpoint, (busy.get(endpoint) ?? 0) + 1);
        if (attempts === 0) held.set(endpoint, Math.max(seq, held.get(endpoint) ?? 0));
      };
      for (const [endpoint, seqs] of running) for (const [seq, attempts] of seqs) hold(endpoint, seq, attempts);
      for (const list of waiting.values()) for (const { delivery: d } of list) hold(d.webhookId, d.seq, d.attempts);
      for (const endpoint of releasing.keys()) busy.set(endpoint, full);
      return { busy, held };
    },
    ended(delivery: ClaimedDelivery) {
      const seqs = running.get(delivery.webhookId);
      seqs?.delete(delivery.seq);
      if (seqs?.size === 0) running.delete(delivery.webhookId);
    },
  };
  return waitingList;
}
