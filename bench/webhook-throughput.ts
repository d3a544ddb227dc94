/**
 * `bun bench/webhook-throughput.ts [--engine postgres] [deliveries]`: how fast a backlog drains to
 * one endpoint that answers at once (a receiver in a process of its own answering 204). The
 * backlog (10,000 created plants by default, fanned out from the change log) is written first;
 * then one dispatcher, with the service's rules, runs until the receiver has every delivery.
 * Prints deliveries per second and the dispatcher's process CPU per delivery (the API's thread,
 * the writer thread). Target (issue 41): at least 1,000 a second on both engines.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, startCluster } from "../scripts/pg-cluster";
import { createOps } from "../src/app";
import type { Stores } from "../src/core/stores";
import { connect, migrate } from "../src/db/postgres/client";
import { createPostgresStores } from "../src/db/postgres/stores";
import { openDatabase } from "../src/db/sqlite/client";
import { createSqliteStores } from "../src/db/sqlite/stores";
import { createDispatcher } from "../src/webhooks/dispatcher";
import { createFanOut } from "../src/webhooks/fan-out";
import { newSecret } from "../src/webhooks/signing";

const engine = process.argv.includes("--engine") ? process.argv[process.argv.indexOf("--engine") + 1] : "sqlite";
const count = Number(process.argv.find((arg) => /^\d+$/.test(arg)) ?? 10_000);
const TARGET = 1_000;

const RECEIVER = `
let got = 0;
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(request) {
  if (request.method === "GET") return new Response(String(got));
  await request.text(); got++; return new Response(null, { status: 204 });
} });
console.log(server.port);`;

async function main() {
  const receiver = Bun.spawn(["bun", "-e", RECEIVER], { stdout: "pipe" });
  const reader = receiver.stdout.getReader();
  const port = Number(new TextDecoder().decode((await reader.read()).value).trim());
  const received = async () => Number(await (await fetch(`http://127.0.0.1:${port}/`)).text());
  const dir = mkdtempSync(join(tmpdir(), "plant-store-webhook-throughput-"));
  let stores: Stores;
  let cleanup = async () => {};
  if (engine === "postgres") {
    const cluster = await startCluster({ durable: true });
    const url = await createDatabase(cluster.url, "bench_webhooks");
    const { client } = connect({
      engine: "postgres",
      url,
      poolSize: 10,
      connectTimeoutMs: 5_000,
      statementTimeoutMs: 10_000,
    });
    await migrate(client);
    stores = createPostgresStores(client, { log: () => {} });
    cleanup = () => cluster.stop();
  } else {
    const { sqlite } = openDatabase({ path: join(dir, "bench.sqlite"), synchronous: "FULL" });
    stores = createSqliteStores(sqlite, { maxQueued: 100_000, lockTimeoutMs: 5_000, log: () => {} });
  }
  const owner = (await stores.tokens.authenticate((await stores.tokens.issue("bench")).token))?.id as number;
  await stores.webhooks.register(owner, `http://127.0.0.1:${port}/hook`, newSecret(), 10, undefined);
  for (let id = 1; id <= count; id += 500) {
    const ids = Array.from({ length: Math.min(500, count - id + 1) }, (_, i) => id + i);
    await Promise.all(ids.map((plant) => stores.plants.createPlant(owner, { id: plant, name: `plant ${plant}` })));
  }
  const fanOut = createFanOut(stores.webhooks, stores.changes);
  const dispatcher = createDispatcher({
    store: stores.webhooks,
    fanOut,
    retryDelaysMs: [60_000],
    allowPrivate: true,
    log: (message, detail) => console.error(message, detail),
    metrics: createOps(stores).metrics,
  });
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  dispatcher.start();
  while ((await received()) < count) await Bun.sleep(50);
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await dispatcher.stop(1_000);
  const rate = count / seconds;
  console.log(
    `webhook throughput (${engine}): ${count.toLocaleString()} deliveries to one endpoint answering at once in ${seconds.toFixed(2)} s: ${Math.round(rate).toLocaleString()} a second, ${Math.round((cpu.user + cpu.system) / count)} µs of the service's CPU each (load ${(await Bun.file("/proc/loadavg").text()).split(" ")[0]})`,
  );
  console.log(`  target: at least ${TARGET.toLocaleString()} a second: ${rate >= TARGET ? "met" : "NOT met"}`);
  await stores.close();
  await cleanup();
  receiver.kill();
  rmSync(dir, { recursive: true, force: true });
}

await main();
