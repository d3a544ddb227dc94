import { describe, expect, test } from "bun:test";
import { createGroups, type Waiting } from "../src/db/postgres/groups";

/*
 * The grouping behind PostgreSQL's creates and token lookups (src/db/postgres/groups.ts), with
 * a `run` that answers each call from its item: which calls share a statement, in what order,
 * and what a failed statement does. Plain logic, no database: it runs the same on both engines.
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

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("groups of calls sharing one statement", () => {
  test("a lone call goes out at once; calls queued behind busy slots leave together, in arrival order", async () => {
    const { groups, releases, run } = heldRuns();
    const grouped = createGroups(run, { concurrency: 2, maxSize: 3 });
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
      { concurrency: 1 },
    );
    const outcomes = await Promise.allSettled([1, 2, 3].map((item) => grouped.add(item)));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
    expect((outcomes[0] as PromiseRejectedResult).reason.message).toBe("the server went away");
    expect(outcomes.slice(1).map((outcome) => (outcome as PromiseFulfilledResult<number>).value)).toEqual([20, 30]);
  });
});
