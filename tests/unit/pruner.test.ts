import { describe, expect, test } from "bun:test";
import { createPruner, type PrunerOptions } from "../../src/core/pruner";
import { manualTimers } from "../support/clock";

const DAY_MS = 86_400_000;

/** A pruner over `ages` (each record's creation time) with manual timers; `calls` records every batch. */
function pruner(ages: number[], options: Partial<PrunerOptions> = {}) {
  const timers = manualTimers();
  const now = 100 * DAY_MS;
  const records = [...ages].sort((a, b) => a - b);
  const calls: Array<{ before: number; limit: number; removed: number }> = [];
  const logged: string[] = [];
  let failWith: Error | undefined;
  const instance = createPruner({
    what: "records",
    async prune(before, limit) {
      if (failWith) throw failWith;
      let removed = 0;
      while (removed < limit && records.length > 0 && (records[0] as number) < before) {
        records.shift();
        removed++;
      }
      calls.push({ before, limit, removed });
      return removed;
    },
    keepMs: 30 * DAY_MS,
    batchSize: 3,
    pauseMs: 50,
    everyMs: 60_000,
    log: (message) => logged.push(message),
    clock: () => now + timers.now(),
    timers,
    ...options,
  });
  return {
    instance,
    timers,
    records,
    calls,
    logged,
    now,
    failNext: (error: Error | undefined) => {
      failWith = error;
    },
  };
}

describe("the pruner", () => {
  test("removes what is past its age in batches of at most batchSize, a pause between full ones", async () => {
    const p = pruner([...Array(7)].map((_, i) => i * DAY_MS).concat([80 * DAY_MS, 99 * DAY_MS]));
    p.instance.start();
    await p.timers.advance(0);
    expect(p.calls).toEqual([{ before: 70 * DAY_MS, limit: 3, removed: 3 }]);
    await p.timers.advance(49);
    expect(p.calls).toHaveLength(1);
    await p.timers.advance(1);
    expect(p.calls.map((call) => call.removed)).toEqual([3, 3]);
    await p.timers.advance(50);
    // The third batch comes back short: nothing more is old enough, so it waits a whole round.
    expect(p.calls.map((call) => call.removed)).toEqual([3, 3, 1]);
    expect(p.records).toEqual([80 * DAY_MS, 99 * DAY_MS]);
    await p.timers.advance(59_999);
    expect(p.calls).toHaveLength(3);
    await p.timers.advance(1);
    expect(p.calls).toHaveLength(4);
    await p.instance.stop();
  });

  test("measures ages on its clock: a record goes once it is keepMs old", async () => {
    const p = pruner([40 * DAY_MS], { keepMs: 60 * DAY_MS, everyMs: DAY_MS });
    p.instance.start();
    await p.timers.advance(0);
    expect(p.records).toHaveLength(1);
    await p.timers.advance(DAY_MS);
    expect(p.records).toEqual([]);
    await p.instance.stop();
  });

  test("keepMs 0 keeps everything: it never prunes", async () => {
    const p = pruner([0, DAY_MS], { keepMs: 0 });
    p.instance.start();
    await p.timers.advance(10 * 60_000);
    expect(p.calls).toEqual([]);
    expect(p.timers.pending()).toBe(0);
  });

  test("a failure is logged once per streak and tried again a round later", async () => {
    const p = pruner([0, 1, 2, 3]);
    p.failNext(new Error("database is locked"));
    p.instance.start();
    await p.timers.advance(0);
    await p.timers.advance(60_000);
    expect(p.logged).toEqual(["pruning records failed; trying again in 60 s"]);
    p.failNext(undefined);
    await p.timers.advance(60_000);
    expect(p.records).toEqual([3]);
    p.failNext(new Error("again"));
    await p.timers.advance(50);
    await p.timers.advance(60_000);
    expect(p.logged).toHaveLength(2);
    await p.instance.stop();
  });

  test("stop waits for the batch under way and starts no other", async () => {
    const timers = manualTimers();
    let finish: (removed: number) => void = () => {};
    let batches = 0;
    const instance = createPruner({
      what: "records",
      prune: () => {
        batches++;
        return new Promise<number>((resolve) => {
          finish = resolve;
        });
      },
      keepMs: 1,
      batchSize: 3,
      pauseMs: 50,
      everyMs: 60_000,
      log: () => {},
      timers,
    });
    instance.start();
    await timers.advance(0);
    let stopped = false;
    const stopping = instance.stop().then(() => {
      stopped = true;
    });
    await timers.advance(0);
    expect(stopped).toBe(false);
    finish(3);
    await stopping;
    await timers.advance(120_000);
    expect(batches).toBe(1);
  });
});
