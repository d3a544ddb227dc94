/**
 * `bun run bench:compare <checkout-a> <checkout-b>`: the same service from two checkouts (a
 * device against the same code without it), in alternating rounds on the same machine.
 *
 * Every round starts each side afresh (`bun --max-http-header-size=16384 src/index.ts`, cwd =
 * the checkout) on a fresh database with 2,000 seeded plants and its output in a file, runs
 * wrk's read (GET /plants?limit=20) and write (POST /plants) scenarios on each, the sides'
 * order reversed every other round, noting the server's CPU time per request (/proc), then
 * reads each side's peak RSS (VmHWM). Then cold start: launches alternating, spawn to the
 * first 200 on /healthz. Settings are the service's defaults (LOG_LEVEL=info, the access log
 * on) but RATE_LIMIT_PER_MINUTE=0, so the load is not answered by 429s.
 * BENCH_ROUNDS (4), BENCH_SECONDS (8), BENCH_LAUNCHES (10).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { fail, fmt, median, peakRssKiB, seedOverHttp } from "./targets";
import { type WrkResult, wrk } from "./wrk";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const LAUNCHES = Number(process.env.BENCH_LAUNCHES ?? 10);
const SEEDED = 2000;
const ENV = { RATE_LIMIT_PER_MINUTE: "0", LOG_LEVEL: "info", HOST: "127.0.0.1" };

const checkouts = process.argv.slice(2, 4).map((dir) => resolve(dir));
if (checkouts.length !== 2) fail("usage: bun run bench:compare <checkout-a> <checkout-b>");
const names = checkouts.map((dir, i) => `${String.fromCharCode(65 + i)}:${basename(dir)}`);
const dir = mkdtempSync(join(tmpdir(), "plant-store-compare-"));
let launches = 0;

function spawnServer(checkout: string, database: string) {
  const output = join(dir, `server-${++launches}.log`);
  const proc = Bun.spawn(["bun", "--max-http-header-size=16384", "src/index.ts"], {
    cwd: checkout,
    env: { ...process.env, ...ENV, PORT: "0", DATABASE_URL: database },
    stdout: Bun.file(output),
    stderr: "inherit",
  });
  return { proc, output };
}

/** A token from the checkout's own CLI: its last line of output. */
async function token(checkout: string, database: string): Promise<string> {
  const proc = Bun.spawn(["bun", "src/cli.ts", "token", "create", "--user", "bench"], {
    cwd: checkout,
    env: { ...process.env, DATABASE_URL: database },
    stdout: "pipe",
    stderr: "inherit",
  });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) fail(`token create failed in ${checkout}`);
  return out.trim().split("\n").at(-1) ?? "";
}

/**
 * The server's URL from its "listening" line (PORT=0: the machine is shared, a fixed port may
 * be taken), then GET /healthz until it answers 200; answers the URL and the ms since `started`.
 */
async function firstHealthy(output: string, started: number, exited: () => boolean) {
  let url: string | undefined;
  for (;;) {
    if (exited()) fail(`a server exited before answering: ${await Bun.file(output).text()}`);
    url ??= /listening on (http:\/\/[^\s"]+)/.exec(await Bun.file(output).text())?.[1];
    if (url) {
      const response = await fetch(`${url}/healthz`);
      await response.arrayBuffer();
      if (response.status === 200) return { url, ms: performance.now() - started };
    }
    await Bun.sleep(1);
  }
}

/** One side started on a fresh database with a token and 2,000 plants, ready for load. */
async function ready(checkout: string) {
  const database = join(dir, `db-${++launches}.sqlite`);
  const bearer = await token(checkout, database);
  const { proc, output } = spawnServer(checkout, database);
  let exited = false;
  proc.exited.then(() => (exited = true));
  const { url } = await firstHealthy(output, performance.now(), () => exited);
  await seedOverHttp(url, bearer, SEEDED);
  await wrk(url, "read", [bearer, bearer, "0"], 1);
  return { proc, output, url, bearer };
}

/** CPU seconds (user + system) the process has used so far, from /proc/<pid>/stat. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A scenario's wrk figures and the server's CPU time per request: steadier than req/s on a busy machine. */
type Load = WrkResult & { cpuUs: number };
type Row = { read: Load; write: Load; rssKiB: number; logBytes: number };
const rows: Row[][] = checkouts.map(() => []);
let idBase = 1_000_000_000;

for (let round = 1; round <= ROUNDS; round++) {
  const order = round % 2 === 1 ? [0, 1] : [1, 0];
  const sides = await Promise.all(checkouts.map((checkout) => ready(checkout)));
  const results: Partial<Row>[] = [{}, {}];
  for (const scenario of ["read", "write"] as const) {
    for (const i of order) {
      const side = sides[i] as Awaited<ReturnType<typeof ready>>;
      idBase += 1_000_000_000;
      const cpuBefore = await cpuSeconds(side.proc.pid);
      const load = await wrk(side.url, scenario, [side.bearer, side.bearer, String(idBase)], SECONDS);
      const cpuUs = ((await cpuSeconds(side.proc.pid)) - cpuBefore) / (load.rps * SECONDS) / 1e-6;
      const result = { ...load, cpuUs };
      if (result.non2xx > 0 || result.errors > 0)
        fail(`${names[i]} ${scenario}: ${result.non2xx} non-2xx, ${result.errors} errors`);
      (results[i] as Partial<Row>)[scenario] = result;
    }
  }
  for (const [i, side] of sides.entries()) {
    const rssKiB = await peakRssKiB(side.proc.pid);
    side.proc.kill("SIGTERM");
    await side.proc.exited;
    const row = { ...results[i], rssKiB, logBytes: Bun.file(side.output).size } as Row;
    (rows[i] as Row[]).push(row);
    console.log(
      `round ${round} ${names[i]}: read ${fmt(row.read.rps)} req/s p99 ${fmt(row.read.p99, 2)} ms ${fmt(row.read.cpuUs)} µs CPU/req; ` +
        `write ${fmt(row.write.rps)} req/s p99 ${fmt(row.write.p99, 2)} ms ${fmt(row.write.cpuUs)} µs CPU/req; peak RSS ${fmt(rssKiB / 1024, 1)} MiB; ` +
        `log ${fmt(row.logBytes / 1024 ** 2, 1)} MiB`,
    );
  }
}

const cold: number[][] = [[], []];
for (let launch = 0; launch < LAUNCHES; launch++) {
  for (const i of launch % 2 === 0 ? [0, 1] : [1, 0]) {
    const checkout = checkouts[i] as string;
    const database = join(dir, `cold-${i}.sqlite`);
    if (launch < 2) await token(checkout, database);
    const started = performance.now();
    const { proc, output } = spawnServer(checkout, database);
    let exited = false;
    proc.exited.then(() => (exited = true));
    const { ms } = await firstHealthy(output, started, () => exited);
    proc.kill("SIGTERM");
    await proc.exited;
    (cold[i] as number[]).push(ms);
  }
}
console.log(
  cold.map((times, i) => `cold start ${names[i]}: ${times.map((ms) => fmt(ms, 1)).join(", ")} ms`).join("\n"),
);

const figures: Array<[string, (row: Row) => number]> = [
  ["read req/s", (row) => row.read.rps],
  ["read p99 ms", (row) => row.read.p99],
  ["read CPU µs/req", (row) => row.read.cpuUs],
  ["write req/s", (row) => row.write.rps],
  ["write p99 ms", (row) => row.write.p99],
  ["write CPU µs/req", (row) => row.write.cpuUs],
  ["peak RSS MiB", (row) => row.rssKiB / 1024],
];
// The machine is shared: a round's two sides see much the same background load, so the
// median of per-round ratios is the steadier figure.
console.log(`\nmedians of ${ROUNDS} rounds (${SECONDS} s, 2 threads, 64 connections)`);
console.log(`| figure | ${names[0]} | ${names[1]} | A / B of medians | median of round A / B |`);
console.log("|---|---:|---:|---:|---:|");
const [a, b] = rows as [Row[], Row[]];
for (const [label, value] of figures) {
  const [ma, mb] = [median(a.map(value)), median(b.map(value))];
  const perRound = median(a.map((row, round) => value(row) / value(b[round] as Row)));
  console.log(`| ${label} | ${fmt(ma, 2)} | ${fmt(mb, 2)} | ${fmt(ma / mb, 3)} | ${fmt(perRound, 3)} |`);
}
const [ca, cb] = cold.map(median) as [number, number];
const coldPairs = median((cold[0] as number[]).map((ms, launch) => ms / ((cold[1] as number[])[launch] as number)));
console.log(`| cold start ms | ${fmt(ca, 1)} | ${fmt(cb, 1)} | ${fmt(ca / cb, 3)} | ${fmt(coldPairs, 3)} |`);
rmSync(dir, { recursive: true, force: true });
