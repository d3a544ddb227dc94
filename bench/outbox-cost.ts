/**
 * `bun bench/outbox-cost.ts [creates]`: what a create's webhook outbox costs the writer.
 * Creates plants in transactions of 64 (as group commit does), synchronous=FULL, alternately by
 * a user with 10 endpoints and by one with none, on a fresh file per variant, and prints the
 * best of 3 rounds in CPU µs per create: no endpoint at all; the outbox as shipped (one event
 * per create, fanned out afterwards in batches of FAN_OUT_EVENTS, each batch its own
 * transaction as the dispatcher's claim runs it: both parts shown); and the deliveries written in
 * the create's own statement as before (drizzle/sqlite/0005). docs/decisions/0009-outbox-events.md.
 */
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FAN_OUT_EVENTS } from "../src/core/webhooks";
import { openDatabase } from "../src/db/sqlite/client";
import { PLANT_SQL } from "../src/db/sqlite/queries";
import { WEBHOOK_SQL } from "../src/db/sqlite/webhook-queries";
import { CIRCUIT_FAILURES } from "../src/webhooks/rules";

const CREATES = Number(process.argv[2] ?? 20_000);
const DELIVERIES_IN_CREATE = `CREATE TRIGGER plants_webhook_deliveries AFTER INSERT ON plants BEGIN
  INSERT INTO webhook_deliveries (id, webhook_id, payload, created_at, next_attempt_at)
  SELECT 'msg_' || printf('%012x', CAST(unixepoch('subsec') * 1000 AS INTEGER)) || lower(hex(randomblob(10))),
    webhooks.id, json_object('id', NEW.id, 'name', NEW.name),
    CAST(unixepoch('subsec') * 1000 AS INTEGER), CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM webhooks WHERE webhooks.owner_id = NEW.owner_id AND webhooks.disabled_at IS NULL;
END`;
const VARIANTS: Record<string, string[]> = {
  "no endpoint": ["DELETE FROM webhooks"],
  "as shipped": [],
  "deliveries in create": ["DROP TRIGGER plants_webhook_events", DELIVERIES_IN_CREATE],
};

const cpu = (started: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(started);
  return (used.user + used.system) / CREATES;
};
const best: Record<string, number> = {};
const keep = (name: string, micros: number) => {
  best[name] = Math.min(best[name] ?? Number.POSITIVE_INFINITY, micros);
};
for (let round = 0; round < 3; round++) {
  for (const [name, setup] of Object.entries(VARIANTS)) {
    const path = join(tmpdir(), `outbox-cost-${process.pid}.sqlite`);
    const { sqlite } = openDatabase({ path, synchronous: "FULL" });
    sqlite.run("INSERT INTO users (name, created_at) VALUES ('a', 0), ('b', 0)");
    for (let i = 0; i < 10; i++) {
      sqlite.run(
        `INSERT INTO webhooks (owner_id, url, secret, created_at) VALUES (1, 'http://127.0.0.1:9/${i}', 's', 0)`,
      );
    }
    for (const statement of setup) sqlite.run(statement);
    const insert = sqlite.prepare(PLANT_SQL.insert).safeIntegers(true);
    const started = process.cpuUsage();
    for (let first = 0; first < CREATES; first += 64) {
      sqlite.run("BEGIN IMMEDIATE");
      for (let i = first; i < first + 64; i++) insert.all(1 + (i % 2), BigInt(i), `Plant ${i}`, "bench");
      sqlite.run("COMMIT");
    }
    keep(`${name}: the create`, cpu(started));
    if (name === "as shipped") {
      const fanOut = sqlite.prepare(WEBHOOK_SQL.fanOut);
      const fanned = process.cpuUsage();
      for (;;) {
        sqlite.run("BEGIN IMMEDIATE");
        const taken = fanOut.all(FAN_OUT_EVENTS, CIRCUIT_FAILURES).length;
        sqlite.run("COMMIT");
        if (taken < FAN_OUT_EVENTS) break;
      }
      keep(`${name}: the fan-out`, cpu(fanned));
      const count = (sql: string) => (sqlite.query(sql).get() as { n: number }).n;
      const expected = count("SELECT count(*) * 10 AS n FROM plants WHERE owner_id = 1");
      const n = count("SELECT count(*) AS n FROM webhook_deliveries");
      if (n !== expected) throw new Error(`fanned out ${n} deliveries, not ${expected}`);
    }
    sqlite.close();
    for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
  }
}
for (const [name, micros] of Object.entries(best)) console.log(`${name.padEnd(32)} ${micros.toFixed(1)} µs per create`);
