/**
 * The per-token limit on PostgreSQL (src/db/postgres/rate-limit.ts): an instance takes a token's
 * budget from the shared bucket a share at a time, so requests do not each cost a statement,
 * and the budget still counts across instances within the documented slack. When the bucket's
 * statement is blocked or fails, requests go ahead (never 503), each waiting at most
 * LIMITER_WAIT_MS, with one log line when that starts and one when it ends. What every engine
 * must show (429, Retry-After, refill) is in tests/api/rate-limit.test.ts; across processes,
 * tests/process/instances.test.ts.
 */
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { createPostgresRateLimiter, LIMITER_WAIT_MS } from "../../src/db/postgres/rate-limit";
import { makeTestApp, onPostgres, recordedPostgres, type TestApp } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/** Far below the statement timeout the tests set, far above the wait bound: a request that waited on the blocked statement would pass it. */
const SERVED_WITHIN_MS = LIMITER_WAIT_MS + 1_500;

/** Sends `count` requests one after the other; each must be a 200 and come back within SERVED_WITHIN_MS. */
async function expectServed(t: TestApp, token: string, count: number) {
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await t.call("GET", "/plants", { token });
    expect({ status: response.status, quick: performance.now() - started < SERVED_WITHIN_MS }).toEqual({
      status: 200,
      quick: true,
    });
  }
}

const statuses = async (t: TestApp, token: string, count: number) => {
  const seen: number[] = [];
  for (let i = 0; i < count; i++) seen.push((await t.call("GET", "/plants", { token })).status);
  return seen;
};

const messages = (t: TestApp) => t.logged.map(({ message }) => message);

describe.if(onPostgres)("the per-token limit on PostgreSQL", () => {
  test("two instances share one budget: no more than the bucket holds, at most a share each fewer, and far fewer statements than requests", async () => {
    const { client, sent, recording } = await recordedPostgres();
    try {
      // 600 a minute: shares of 6; the clock stands still, so nothing refills.
      const clock = () => 5_000_000;
      const log = () => {};
      // Counting is under test, not the wait: a slow machine must not let requests through unasked.
      const waitMs = 60_000;
      const instances = [1, 2].map(() => createPostgresRateLimiter(recording, 600, clock, { log, waitMs }));
      const takes = Array.from({ length: 1000 }, (_, i) => (instances[i % 2] as (typeof instances)[0]).take(42));
      const answers = await Promise.all(takes);
      const granted = answers.filter((answer) => !answer?.refused).length;
      expect(granted).toBeLessThanOrEqual(600);
      expect(granted).toBeGreaterThanOrEqual(600 - 2 * 5);
      // A whole token refills in 0.1 s: Retry-After is never under 1 s.
      const refused = answers.filter((answer) => answer?.refused);
      expect(new Set(refused.map((answer) => answer?.resetSeconds))).toEqual(new Set([1]));
      // One statement a share (100), and one per instance to find the bucket empty.
      expect(sent.length).toBeLessThanOrEqual(110);
      const [row] = await client`SELECT tokens FROM rate_limits WHERE key = 42`;
      expect(row.tokens).toBeLessThan(1);
    } finally {
      await client.close();
    }
  });

  test("a share in hand, or a bucket known empty, answers at once: only the ask for a share waits on the database", async () => {
    const { client, sent, recording } = await recordedPostgres();
    try {
      // 600 a minute: shares of 6, the bucket holds 600 until it is taken; the clock stands still.
      const limiter = createPostgresRateLimiter(recording, 600, () => 5_000_000, { log: () => {}, waitMs: 60_000 });
      const first = limiter.take(7);
      expect(first).toBeInstanceOf(Promise);
      expect((await first)?.refused).toBe(false);
      const inHand = Array.from({ length: 5 }, () => limiter.take(7));
      expect(inHand.filter((answer) => answer instanceof Promise)).toEqual([]);
      expect(inHand.map((answer) => (answer as { remaining: number }).remaining)).toEqual([598, 597, 596, 595, 594]);
      expect(sent.length).toBe(1);
      // The share spent: the next asks again.
      expect(limiter.take(7)).toBeInstanceOf(Promise);
      // One a minute: the second request finds the bucket empty; the third knows it without asking.
      const scarce = createPostgresRateLimiter(recording, 1, () => 5_000_000, { log: () => {}, waitMs: 60_000 });
      expect((await scarce.take(8))?.refused).toBe(false);
      expect((await scarce.take(8))?.refused).toBe(true);
      const sentBefore = sent.length;
      expect(scarce.take(8)).toEqual({ refused: true, limit: 1, remaining: 0, resetSeconds: 60 });
      expect(sent.length).toBe(sentBefore);
    } finally {
      await client.close();
    }
  });

  test("a lock on rate_limits held by another session: requests are served at once, never 503; logged once; counted again once the lock is gone", async () => {
    const now = 1_000_000;
    const t = await makeTestApp({
      rateLimitPerMinute: 3,
      now: () => now,
      statementTimeoutMs: 5_000,
      limiterWaitMs: LIMITER_WAIT_MS,
    });
    const token = await t.tokenFor("alice");
    expect(await statuses(t, token, 1)).toEqual([200]);
    const other = new SQL(t.postgresUrl as string, { max: 1 });
    const session = await other.reserve();
    try {
      await session`BEGIN`;
      await session`LOCK TABLE rate_limits IN ACCESS EXCLUSIVE MODE`;
      // More than the budget: nothing is counted while the bucket cannot answer.
      await expectServed(t, token, 6);
      expect(messages(t)).toEqual([expect.stringMatching(/rate limit gave no answer within \d+ ms/)]);
    } finally {
      await session`ROLLBACK`;
      session.release();
      await other.close();
    }
    // The statement that waited on the lock answers: one token of the two left is this instance's now.
    await until(() => t.logged.length, { holds: (n) => n === 2, what: "the second log line" });
    expect(messages(t)[1]).toMatch(/rate limit answers again/);
    expect(await statuses(t, token, 3)).toEqual([200, 200, 429]);
  });

  test("the limiter's statement fails (its table is gone): requests are served, logged once; the limit counts again once it answers", async () => {
    const now = 1_000_000;
    const t = await makeTestApp({ rateLimitPerMinute: 3, now: () => now, limiterWaitMs: LIMITER_WAIT_MS });
    const token = await t.tokenFor("alice");
    expect(await statuses(t, token, 1)).toEqual([200]);
    const admin = new SQL(t.postgresUrl as string, { max: 1 });
    try {
      await admin`DROP TABLE rate_limits`;
      await expectServed(t, token, 6);
      expect(messages(t)).toEqual([expect.stringMatching(/rate limit failed/)]);
      await admin.unsafe(
        "CREATE UNLOGGED TABLE rate_limits (key bigint PRIMARY KEY, tokens double precision NOT NULL, updated_at double precision NOT NULL)",
      );
    } finally {
      await admin.close();
    }
    // An empty table: a full bucket of 3 again.
    expect(await statuses(t, token, 4)).toEqual([200, 200, 200, 429]);
    expect(messages(t)).toHaveLength(2);
    expect(messages(t)[1]).toMatch(/rate limit answers again/);
  });
});
