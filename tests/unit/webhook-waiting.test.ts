/**
 * Claimed deliveries waiting for their endpoint's slots (src/webhooks/waiting.ts): started in the
 * order claimed, and one held past half its lease is not started (it could outlive its lease and be
 * sent twice): its endpoint's waiting ones are let go of together, so none newer overtakes it.
 */
import { expect, test } from "bun:test";
import type { ClaimedDelivery } from "../../src/core/webhooks";
import { LEASE_MS } from "../../src/webhooks/rules";
import { waitingDeliveries } from "../../src/webhooks/waiting";

const delivery = (webhookId: number, seq: number): ClaimedDelivery => ({
  seq,
  id: `msg_${seq}`,
  webhookId,
  url: "https://example.com/",
  secret: "whsec_x",
  payload: "{}",
  attempts: 0,
});

test("past half its lease, an endpoint's waiting deliveries are let go of together, in order; another endpoint's still start", () => {
  let now = 0;
  const waiting = waitingDeliveries(1, () => now);
  for (const seq of [1, 2, 3]) waiting.add(delivery(7, seq));
  const started: number[] = [];
  const letGo: number[][] = [];
  const launch = (d: ClaimedDelivery) => started.push(d.seq);
  const release = (endpoint: number) => letGo.push(waiting.takeAll(endpoint).map((d) => d.seq));
  waiting.start(() => true, launch, release);
  expect(started).toEqual([1]);
  // The receiver takes longer than half the lease to answer; meanwhile another endpoint's is claimed.
  now = LEASE_MS / 2 + 1;
  waiting.add(delivery(8, 4));
  waiting.ended(delivery(7, 1));
  waiting.start(() => true, launch, release);
  expect({ started, letGo, waiting: waiting.count() }).toEqual({ started: [1, 4], letGo: [[2, 3]], waiting: 0 });
  expect(waiting.holding(64)).toEqual({ busy: new Map([[8, 1]]), held: new Map([[8, 4]]) });
});

test("stale() names an endpoint whose oldest is past half its lease; one past 3/4 of it is dropped, never let go of", () => {
  let now = 0;
  const waiting = waitingDeliveries(4, () => now);
  waiting.add(delivery(7, 1));
  now = LEASE_MS / 4;
  waiting.add(delivery(7, 2));
  waiting.add(delivery(8, 3));
  now = LEASE_MS / 2 + 1;
  expect(waiting.stale()).toEqual([7]);
  // Its lease may have ended and another instance claimed it: letting it go would make it due under that one.
  now = (LEASE_MS * 3) / 4 + 1;
  expect(waiting.takeAll(7).map((d) => d.seq)).toEqual([2]);
  expect(waiting.count()).toBe(1);
});
