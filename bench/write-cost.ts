/**
 * `bun bench/write-cost.ts <checkout A> <checkout B> [rounds]`: what a create, an update and a
 * delete cost through each checkout's SQLite store as the service runs it (a file, FULL sync, the
 * writer thread, 64 writes at once), in alternating rounds, each in a process of its own: server
 * CPU µs per write (every thread) and writes per second, medians with B/A. The change log
 * (docs/decisions/0010-change-log-order.md) is the only new work on the write path since 9f738f1.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const OPS = ["create", "update", "delete"] as const;
type Op = (typeof OPS)[number];
const AT_ONCE = 64;
const PER_WORKER = 300;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** Run inside a child: `bun bench/write-cost.ts --child <checkout> <op>` prints `cpu rate`. */
async function child(root: string, op: Op) {
  const { openDatabase } = await import(join(root, "src/db/sqlite/client.ts"));
  const { createSqliteStores } = await import(join(root, "src/db/sqlite/stores.ts"));
  const dir = mkdtempSync(join(tmpdir(), "plant-store-write-cost-"));
  const { sqlite } = openDatabase({ path: join(dir, "p.sqlite"), synchronous: "FULL" });
  const stores = createSqliteStores(sqlite, { maxQueued: 100_000, lockTimeoutMs: 5_000, log: () => {} });
  const owner = (await stores.tokens.authenticate((await stores.tokens.issue("bench")).token)).id;
  const total = AT_ONCE * PER_WORKER;
  let next = 0;
  const plants = stores.plants;
  const create = (id: number) => plants.createPlant(owner, { id, name: `plant ${id}`, tag: "tag" });
  const writes: Record<Op, (id: number) => Promise<unknown>> = {
    create: (id) => create(total + id),
    update: (id) => plants.updatePlant(owner, BigInt(id), { name: `renamed ${id}` }),
    delete: (id) => plants.deletePlant(owner, BigInt(id)),
  };
  // The plants an update or a delete works on, and a warm-up of the operation itself.
  for (let id = 1; id <= total + 2_000; id += 500) {
    await Promise.all(Array.from({ length: 500 }, (_, i) => create(1_000_000 + id + i)));
  }
  await Promise.all(Array.from({ length: total }, (_, i) => create(i + 1)));
  await Promise.all(Array.from({ length: 500 }, (_, i) => writes[op](1_000_000 + i + 1)));
  const worker = async () => {
    for (let i = 0; i < PER_WORKER; i++) await writes[op](++next);
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: AT_ONCE }, worker));
  const cpu = process.cpuUsage(cpu0);
  const seconds = (performance.now() - t0) / 1000;
  console.log(`${(cpu.user + cpu.system) / total} ${total / seconds}`);
  await stores.close();
  rmSync(dir, { recursive: true, force: true });
}

async function main() {
  const [a, b, roundsArg] = process.argv.slice(2);
  if (!a || !b) throw new Error("usage: bun bench/write-cost.ts <checkout A> <checkout B> [rounds]");
  const rounds = Number(roundsArg ?? 5);
  const sides = { A: resolve(a), B: resolve(b) };
  const figures: Record<string, { cpu: number[]; rate: number[]; ratio: number[]; speed: number[] }> = {};
  for (let round = 1; round <= rounds; round++) {
    for (const op of OPS) {
      const order = round % 2 === 1 ? (["A", "B"] as const) : (["B", "A"] as const);
      const got: Record<string, [number, number]> = {};
      for (const side of order) {
        const run = Bun.spawnSync(["bun", import.meta.path, "--child", sides[side], op], { stderr: "inherit" });
        const [cpu, rate] = run.stdout.toString().trim().split(" ").map(Number) as [number, number];
        got[side] = [cpu, rate];
        figures[`${op} ${side}`] ??= { cpu: [], rate: [], ratio: [], speed: [] };
        figures[`${op} ${side}`]?.cpu.push(cpu);
        figures[`${op} ${side}`]?.rate.push(rate);
      }
      const [cpuA, rateA] = got.A as [number, number];
      const [cpuB, rateB] = got.B as [number, number];
      figures[`${op} B`]?.ratio.push(cpuB / cpuA);
      figures[`${op} B`]?.speed.push(rateB / rateA);
      console.error(
        `round ${round} ${op}: A ${cpuA.toFixed(1)} µs ${rateA.toFixed(0)}/s, B ${cpuB.toFixed(1)} µs ${rateB.toFixed(0)}/s`,
      );
    }
  }
  console.log(
    `A: ${sides.A}\nB: ${sides.B}\n${rounds} alternating rounds, ${AT_ONCE * PER_WORKER} writes each, ${AT_ONCE} at once; medians`,
  );
  console.log("| write | A CPU µs | B CPU µs | B/A CPU | A writes/s | B writes/s | B/A writes/s |");
  console.log("|---|---:|---:|---:|---:|---:|---:|");
  for (const op of OPS) {
    const [fa, fb] = [figures[`${op} A`], figures[`${op} B`]];
    if (!fa || !fb) continue;
    console.log(
      `| ${op} | ${median(fa.cpu).toFixed(1)} | ${median(fb.cpu).toFixed(1)} | ${median(fb.ratio).toFixed(2)} | ${median(fa.rate).toFixed(0)} | ${median(fb.rate).toFixed(0)} | ${median(fb.speed).toFixed(2)} |`,
    );
  }
  console.log(`load average: ${(await Bun.file("/proc/loadavg").text()).trim()}`);
}

if (process.argv[2] === "--child") await child(resolve(process.argv[3] as string), process.argv[4] as Op);
else await main();
