import type { ClaimedDelivery } from "../core/stores";
import { LEASE_MS, RELEASE_WAIT_MS } from "./rules";

/**
 * Claimed deliveries waiting for their endpoint's slots, oldest first, and the attempts in flight per endpoint:
 * the next starts as a slot frees, without a claim between (docs/decisions/0012-webhook-throughput.md).
 */
export function waitingDeliveries(perEndpoint: number, now: () => number = () => performance.now()) {
  const waiting = new Map<number, Array<{ delivery: ClaimedDelivery; claimedAt: number }>>();
  const running = new Map<number, number>();
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
        while (list.length > 0 && room() && (running.get(endpoint) ?? 0) < perEndpoint) {
          const { delivery, claimedAt } = list[0] as { delivery: ClaimedDelivery; claimedAt: number };
          if (now() - claimedAt > LEASE_MS / 2) {
            letGo(endpoint);
            break;
          }
          list.shift();
          count--;
          running.set(endpoint, (running.get(endpoint) ?? 0) + 1);
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
    /** Per endpoint, its deliveries claimed and not settled (the claim's `busy`); `full` while a release is under way. */
    busy(full: number) {
      const busy = new Map(running);
      for (const [endpoint, list] of waiting) busy.set(endpoint, (busy.get(endpoint) ?? 0) + list.length);
      for (const endpoint of releasing.keys()) busy.set(endpoint, full);
      return busy;
    },
    ended(delivery: ClaimedDelivery) {
      const left = (running.get(delivery.webhookId) ?? 1) - 1;
      if (left > 0) running.set(delivery.webhookId, left);
      else running.delete(delivery.webhookId);
    },
  };
  return waitingList;
}
