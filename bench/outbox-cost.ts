/**
 * `bun bench/outbox-cost.ts [creates]`: what a create's webhook deliveries cost the writer.
 * Creates plants in transactions of 64 (as group commit does), synchronous=FULL, alternately by
 * a user with 10 endpoints and by one with none, on a fresh file per variant, and prints the
 * best of 3 rounds in CPU µs per create: no endpoint at all, the outbox as shipped, its delivery
 * ids random as they were (drizzle/sqlite/0003), and its table with no secondary index (a floor).
 * docs/decisions/0008-webhook-budget.md.
 */
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../src/db/sqlite/client";
import { PLANT_SQL } from "../src/db/sqlite/queries";

const CREATES = Number(process.argv[2] ?? 20_000);
const RANDOM_IDS = `CREATE TRIGGER plants_webhook_deliveries AFTER INSERT ON plants BEGIN
  INSERT INTO webhook_deliveries (id, webhook_id, payload, created_at, next_attempt_at)
  SELECT 'msg_' || lower(hex(randomblob(16))), webhooks.id, json_object('id', NEW.id, 'name', NEW.name),
    CAST(unixepoch('subsec') * 1000 AS INTEGER), CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM webhooks WHERE webhooks.owner_id = NEW.owner_id AND webhooks.disabled_at IS NULL;
END`;
const VARIANTS: Record<string, string[]> = {
  "no endpoint": ["DELETE FROM webhooks"],
  "as shipped": [],
  "random ids": ["DROP TRIGGER plants_webhook_deliveries", RANDOM_IDS],
  "no secondary index": [
    "DROP INDEX webhook_deliveries_id_unique",
    "DROP INDEX webhook_deliveries_webhook_seq_idx",
    "DROP INDEX webhook_deliveries_endpoint_due_idx",
  ],
};

const best: Record<string, number> = {};
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
    const used = process.cpuUsage(started);
    best[name] = Math.min(best[name] ?? Number.POSITIVE_INFINITY, (used.user + used.system) / CREATES);
    sqlite.close();
    for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
  }
}
for (const [name, micros] of Object.entries(best)) console.log(`${name.padEnd(20)} ${micros.toFixed(1)} µs per create`);
