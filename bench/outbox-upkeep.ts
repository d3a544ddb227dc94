/**
 * The outbox's upkeep on SQLite (docs/decisions/0006-outbox-upkeep.md):
 * - the pending gauge with 2,000,000 pending deliveries: one `count(*)` (the code before) against
 *   the store's count in steps, alternating; for each, the longest the event loop was held and
 *   the whole read's time;
 * - one retention batch (100 deliveries, with 1 or 8 attempts each), committed with FULL sync.
 *
 *   bun bench/outbox-upkeep.ts            (the 2 M-row file is built once in the temp folder)
 */
import { existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PRUNE_BATCH } from "../src/core/pruner";
import { openDatabase } from "../src/db/sqlite/client";
import { WEBHOOK_SQL } from "../src/db/sqlite/webhook-queries";
import { createSqliteWebhookStore } from "../src/db/sqlite/webhooks";
import { createWriter } from "../src/db/sqlite/writer";

const PENDING = 2_000_000;
const ROUNDS = 7;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

function seeded(path: string, fill: (sqlite: import("bun:sqlite").Database) => void) {
  const fresh = !existsSync(path);
  const { sqlite } = openDatabase({ path, synchronous: "FULL" });
  if (fresh) {
    sqlite.run("INSERT INTO users (name, created_at) VALUES ('a', 0)");
    sqlite.run("INSERT INTO webhooks (owner_id, url, secret, created_at) VALUES (1, 'https://example.com/', 's', 0)");
    fill(sqlite);
  }
  return sqlite;
}

/** The process's CPU time (ms); the thread's own is counted in 4 ms ticks, too coarse here. */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

interface Stall {
  /** CPU time between two turns of the event loop while `read` ran (ms). */
  cpu: number[];
  /** The same in wall time: with preemption by the machine's other work. */
  wall: number[];
  whole: number;
  n: number;
}

async function stall(read: () => Promise<number>): Promise<Stall> {
  const cpu: number[] = [];
  const wall: number[] = [];
  let last = { cpu: cpuMs(), wall: performance.now() };
  let running = true;
  const beat = () => {
    const now = { cpu: cpuMs(), wall: performance.now() };
    cpu.push(now.cpu - last.cpu);
    wall.push(now.wall - last.wall);
    last = now;
    if (running) setImmediate(beat);
  };
  await new Promise((resolve) => setImmediate(resolve));
  last = { cpu: cpuMs(), wall: performance.now() };
  setImmediate(beat);
  const started = performance.now();
  const n = await read();
  const whole = performance.now() - started;
  beat();
  running = false;
  return { cpu, wall, whole, n };
}

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)] as number;

const gaugeFile = join(tmpdir(), "plant-store-bench-pending.sqlite");
const gaugeDb = seeded(gaugeFile, (sqlite) =>
  sqlite.run(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${PENDING})
    INSERT INTO webhook_deliveries (id, webhook_id, payload, created_at, next_attempt_at)
    SELECT 'msg_' || lower(hex(randomblob(16))), 1, '{"id":' || i || ',"name":"plant ' || i || '"}',
      1700000000000 + i / 10, 1700000000000 + i / 10 FROM n`),
);
const store = createSqliteWebhookStore(gaugeDb, createWriter(gaugeDb, {}), Date.now);
const oneCount = gaugeDb.prepare<{ n: number }, []>(
  "SELECT count(*) AS n FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL",
);
const contenders = { "one count(*)": async () => oneCount.get()?.n ?? 0, "in steps": () => store.pendingCount() };
const results: Record<string, Stall[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  const order = Object.entries(contenders);
  if (round % 2) order.reverse();
  for (const [name, read] of order) {
    const result = await stall(read);
    if (result.n !== PENDING) throw new Error(`${name} counted ${result.n}`);
    results[name] = [...(results[name] ?? []), result];
  }
}
console.log(`pending gauge, ${PENDING.toLocaleString("en")} pending, median of ${ROUNDS} alternating rounds:`);
for (const [name, rounds] of Object.entries(results)) {
  const figure = (of: (r: Stall) => number) => median(rounds.map(of)).toFixed(2);
  console.log(
    `  ${name}: event loop held (CPU ms) p50 ${figure((r) => quantile(r.cpu, 0.5))}, p99 ${figure((r) => quantile(r.cpu, 0.99))}, longest ${figure((r) => Math.max(...r.cpu))}; longest in wall time ${figure((r) => Math.max(...r.wall))}; whole read ${figure((r) => r.whole)} ms; turns ${figure((r) => r.cpu.length)}`,
  );
}
gaugeDb.close();

for (const attempts of [1, 8]) {
  const path = join(tmpdir(), `plant-store-bench-prune-${attempts}.sqlite`);
  for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
  const sqlite = seeded(path, (db) => {
    db.run(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
      INSERT INTO webhook_deliveries (id, webhook_id, payload, status, created_at, next_attempt_at)
      SELECT 'msg_' || lower(hex(randomblob(16))), 1, '{"id":' || i || ',"name":"plant ' || i || '"}', 'delivered',
        1700000000000 + i, NULL FROM n`);
    db.run(`WITH RECURSIVE a(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM a WHERE k < ${attempts})
      INSERT INTO webhook_attempts (delivery_seq, attempt, at, status_code, duration_ms, error, outcome, retry_in_ms)
      SELECT seq, k, created_at, 500, 12, 'connection refused', 'delivered', NULL FROM webhook_deliveries, a`);
  });
  const prune = createSqliteWebhookStore(sqlite, createWriter(sqlite, {}), Date.now);
  const times: number[] = [];
  for (let batch = 0; batch < 30; batch++) {
    const started = performance.now();
    const removed = await prune.pruneFinished(1800000000000, PRUNE_BATCH);
    times.push(performance.now() - started);
    if (removed !== PRUNE_BATCH) throw new Error(`removed ${removed}`);
  }
  console.log(
    `retention batch of ${PRUNE_BATCH} deliveries with ${attempts} attempt(s) each (of 200,000), commit included: median ${median(times).toFixed(1)} ms of 30`,
  );
  sqlite.close();
  for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
}
console.log(`statement text: ${WEBHOOK_SQL.pruneFinished.replace(/\s+/g, " ")}`);
