/**
 * The change log's pruning (docs/decisions/0010-change-log-order.md): one batch of 100 changes
 * on a log of 1,000,000, through the store as the service runs it (the group commit, FULL sync),
 * while the event loop's turns are timed; and a batch when nothing is old enough (the oldest
 * change is young), which must cost the same however large the log.
 *
 *   bun bench/change-upkeep.ts            (the 1 M-row file is built once in the temp folder)
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPruner } from "../src/core/pruner";
import { openDatabase } from "../src/db/sqlite/client";
import { createSqliteStores } from "../src/db/sqlite/stores";

const CHANGES = 1_000_000;
const BATCHES = 30;
const BATCH = 100;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const max = (xs: number[]) => Math.max(...xs);

const path = join(tmpdir(), "plant-store-change-upkeep.sqlite");
const fresh = !existsSync(path);
const { sqlite } = openDatabase({ path, synchronous: "FULL" });
if (fresh) {
  sqlite.run("INSERT INTO users (name, created_at) VALUES ('a', 0), ('b', 0)");
  const insert = sqlite.prepare(
    "INSERT INTO plant_changes (owner_id, type, at, id, name, tag) VALUES (?, 'plant.created', ?, ?, ?, 'tag')",
  );
  sqlite.transaction(() => {
    for (let i = 1; i <= CHANGES; i++) insert.run(1 + (i % 2), i, i, `plant ${i}`);
  })();
}
const stores = createSqliteStores(sqlite, { maxQueued: 1024, lockTimeoutMs: 5_000, log: () => {} });

/** The longest gap between two turns of the event loop while `work` runs (ms). */
async function held(work: () => Promise<unknown>): Promise<{ ms: number; gap: number }> {
  let last = performance.now();
  let gap = 0;
  let running = true;
  const beat = () => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
    if (running) setImmediate(beat);
  };
  setImmediate(beat);
  const start = performance.now();
  await work();
  const ms = performance.now() - start;
  running = false;
  return { ms, gap };
}

const oldest = () => (sqlite.query("SELECT at FROM plant_changes ORDER BY seq LIMIT 1").get() as { at: number }).at;
const young: Array<{ ms: number; gap: number }> = [];
const batches: Array<{ ms: number; gap: number }> = [];
for (let i = 0; i < BATCHES; i++) {
  // Nothing old enough: the oldest change is at `oldest()`, the cut just before it.
  const first = oldest();
  young.push(await held(() => stores.changes.prune(first, BATCH)));
  const cut = first + BATCH;
  batches.push(await held(() => stores.changes.prune(cut, BATCH)));
}
console.log(`change log pruning, SQLite file, FULL sync, ${CHANGES.toLocaleString()} changes, ${BATCHES} batches each`);
console.log("| batch | time, median (max) | event loop held, median (max) |");
console.log("|---|---|---|");
const row = (name: string, xs: Array<{ ms: number; gap: number }>) =>
  console.log(
    `| ${name} | ${median(xs.map((x) => x.ms)).toFixed(2)} ms (${max(xs.map((x) => x.ms)).toFixed(2)}) | ${median(
      xs.map((x) => x.gap),
    ).toFixed(2)} ms (${max(xs.map((x) => x.gap)).toFixed(2)}) |`,
  );
row(`${BATCH} changes pruned, commit with fsync included`, batches);
row("nothing old enough", young);
// The pruner itself, as index.ts starts it: a batch, then the next after its pause.
const now = oldest() + 3_600_000 + 5 * BATCH;
const pruner = createPruner({
  what: "old changes",
  prune: (before, limit) => stores.changes.prune(before, limit),
  keepMs: 3_600_000,
  log: () => {},
  clock: () => now,
});
const run = await held(async () => {
  pruner.start();
  await Bun.sleep(500);
  await pruner.stop();
});
console.log(`the pruner for 0.5 s: event loop held at most ${run.gap.toFixed(2)} ms`);
await stores.close();
