import { describe, expect, test } from "bun:test";
import { createChangeFeed } from "../../src/changes/feed";
import type { Change, ChangeStore } from "../../src/core/changes";
import { within } from "../support/until";

/** A change log in memory; `newest` can be held, as a slow round trip would be. */
function memoryLog() {
  const log: Change[] = [];
  const wakes: Array<() => void> = [];
  let hold: Promise<void> | undefined;
  let watchFails = 0;
  const add = (ownerId: number) => {
    const seq = log.length + 1;
    log.push({ seq, ownerId, type: "plant.created", at: 0, id: BigInt(seq), plant: { name: `p${seq}` } });
    for (const wake of wakes) wake();
  };
  const store: ChangeStore = {
    async read(ownerId, after, count) {
      const mine = log.filter((change) => change.ownerId === ownerId && change.seq > Number(after));
      const newest = Math.max(0, ...log.filter((change) => change.ownerId === ownerId).map((change) => change.seq));
      return { changes: mine.slice(0, count), more: mine.length > count, newest, prunedThrough: 0 };
    },
    readAll: async (after, count) => log.filter((change) => change.seq > after).slice(0, count),
    settle: async () => {},
    async newest() {
      await hold;
      return log.length;
    },
    prune: async () => 0,
    async watch(wake) {
      if (watchFails > 0) {
        watchFails--;
        throw new Error("LISTEN failed");
      }
      wakes.push(wake);
      return async () => {};
    },
  };
  return {
    store,
    add,
    holdNewest() {
      let release = () => {};
      hold = new Promise((resolve) => {
        release = resolve;
      });
      return release;
    },
    failWatch: (times: number) => {
      watchFails = times;
    },
  };
}

const feedOn = (store: ChangeStore) =>
  createChangeFeed({ store, tokens: { stillValid: async (ids) => new Set(ids) }, log: () => {}, perToken: 5, max: 10 });

/** Reads a stream until `id: <seq>` arrives, or fails after 5 s. */
async function expectEvent(body: ReadableStream<Uint8Array>, seq: number) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  await within(
    (async () => {
      while (!text.includes(`id: ${seq}\n`)) text += decoder.decode((await reader.read()).value ?? new Uint8Array());
    })(),
    5_000,
    `the event with id ${seq}`,
  );
  await reader.cancel();
}

describe("the change feed", () => {
  test("two streams opened at once on an idle feed both get a change committed while the first was opening", async () => {
    const { store, add, holdNewest } = memoryLog();
    for (let i = 0; i < 5; i++) add(1);
    const feed = feedOn(store);
    const release = holdNewest();
    const first = feed.open(1, 1, undefined);
    const second = feed.open(2, 2, 0n);
    add(2);
    release();
    await first;
    await expectEvent(await second, 6);
    await feed.close();
  });

  test("a start that failed (a LISTEN refused) is tried again by the next stream", async () => {
    const { store, add, failWatch } = memoryLog();
    const feed = feedOn(store);
    failWatch(1);
    await expect(feed.open(1, 1, undefined)).rejects.toThrow("LISTEN failed");
    const body = await feed.open(1, 1, undefined);
    add(1);
    await expectEvent(body, 1);
    await feed.close();
  });
});
