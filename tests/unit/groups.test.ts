import { describe, expect, test } from "bun:test";
import { createGroups, type Waiting } from "../../src/db/postgres/groups";
import { manualTimers, settle } from "../support/clock";

/*
 * The grouping behind PostgreSQL's creates and token lookups (src/db/postgres/groups.ts), with
 * a `run` that answers each call from its item: which calls share a statement, in what order,
 * and what a failed statement does. Plain logic, no database: it runs the same on both engines.
 * The stall tests run on a clock of their own (support/clock.ts): time passes when they say so.
 */

/** A `run` that records each group and answers when released. */
function heldRuns() {
  const groups: number[][] = [];
  const releases: Array<() => void> = [];
  const run = (group: Array<Waiting<number, string>>) =>
    new Promise<void>((resolve) => {
      groups.push(group.map((waiting) => waiting.item));
      releases.push(() => {
        for (const waiting of group) waiting.resolve(`answer ${waiting.item}`);
        resolve();
      });
    });
  return { groups, releases, run };
}

describe("groups of calls sharing one statement", () => {
  test("a lone call goes out at once; calls queued behind busy slots leave together, in arrival order", async () => {
    const { groups, releases, run } = heldRuns();
    // Held as long as the test takes: no statement gives up its slot here (see the stall tests).
    const grouped = createGroups(run, { concurrency: 2, maxSize: 3, stallMs: Number.POSITIVE_INFINITY });
    const answers = [1, 2, 3, 4, 5, 6, 7].map((item) => grouped.add(item));
    expect(groups).toEqual([[1], [2]]);
    releases[0]?.();
    await settle();
    expect(groups).toEqual([[1], [2], [3, 4, 5]]);
    releases[1]?.();
    await settle();
    expect(groups).toEqual([[1], [2], [3, 4, 5], [6, 7]]);
    for (const release of releases.slice(2)) release();
    expect(await Promise.all(answers)).toEqual([1, 2, 3, 4, 5, 6, 7].map((item) => `answer ${item}`));
  });

  test("a statement that fails is the answer of every call in its group, and of no other", async () => {
    let first = true;
    const grouped = createGroups<number, number>(
      async (group) => {
        if (first) {
          first = false;
          await settle();
          throw new Error("the server went away");
        }
        for (const waiting of group) waiting.resolve(waiting.item * 10);
      },
      { concurrency: 1, stallMs: Number.POSITIVE_INFINITY },
    );
    const outcomes = await Promise.allSettled([1, 2, 3].map((item) => grouped.add(item)));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
    expect((outcomes[0] as PromiseRejectedResult).reason.message).toBe("the server went away");
    expect(outcomes.slice(1).map((outcome) => (outcome as PromiseFulfilledResult<number>).value)).toEqual([20, 30]);
  });

  test("a statement held past stallMs gives up its slot: the calls queued behind it go out in another", async () => {
    const { groups, releases, run } = heldRuns();
    const timers = manualTimers();
    const grouped = createGroups(run, { concurrency: 1, stallMs: 30, maxRunning: 3, timers });
    const first = grouped.add(1);
    const queued = [2, 3].map((item) => grouped.add(item));
    expect(groups).toEqual([[1]]);
    // The second statement leaves once the first has been out 30 ms, not before.
    await timers.advance(29);
    expect(groups).toEqual([[1]]);
    await timers.advance(1);
    expect(groups).toEqual([[1], [2, 3]]);
    releases[1]?.();
    expect(await Promise.all(queued)).toEqual(["answer 2", "answer 3"]);
    // The held statement's call is still waiting for its own statement, and gets its own answer.
    let firstSettled = false;
    void first.finally(() => {
      firstSettled = true;
    });
    await settle();
    expect(firstSettled).toBe(false);
    releases[0]?.();
    expect(await first).toBe("answer 1");
  });

  test("stalled statements count against maxRunning: past it, calls wait for one to end", async () => {
    const { groups, releases, run } = heldRuns();
    const timers = manualTimers();
    const grouped = createGroups(run, { concurrency: 1, stallMs: 20, maxRunning: 2, timers });
    const answers = [grouped.add(1), grouped.add(2)];
    await timers.advance(20);
    expect(groups).toEqual([[1], [2]]);
    answers.push(grouped.add(3));
    // Both statements are stalled and both are out: the third call waits however long they take.
    await timers.advance(10_000);
    expect(groups).toEqual([[1], [2]]);
    // One ends: the third goes out, the second having been out past stallMs by then.
    releases[0]?.();
    await timers.advance(0);
    expect(groups).toEqual([[1], [2], [3]]);
    releases[1]?.();
    releases[2]?.();
    expect(await Promise.all(answers)).toEqual(["answer 1", "answer 2", "answer 3"]);
  });

  test("a statement that ends in time keeps grouping as before: nothing leaves early", async () => {
    const { groups, releases, run } = heldRuns();
    const timers = manualTimers();
    const grouped = createGroups(run, { concurrency: 1, stallMs: 200, timers });
    const answers = [1, 2, 3].map((item) => grouped.add(item));
    await timers.advance(199);
    releases[0]?.();
    await settle();
    expect(groups).toEqual([[1], [2, 3]]);
    releases[1]?.();
    expect(await Promise.all(answers)).toEqual(["answer 1", "answer 2", "answer 3"]);
  });
});
