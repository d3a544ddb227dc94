/**
 * One huge answer: a user with 1,000,000 plants lists them all (`GET /plants`, no limit) while
 * `/healthz` is polled every ~10 ms. For 1 and then 8 concurrent full reads it reports how far
 * the server's resident memory rose above its idle level, the worst `/healthz` latency, and
 * how long the reads took. Part of `bun run bench`; alone:
 *
 *   bun bench/big-list.ts            (BENCH_BIG_LIST_PLANTS=1000000 by default)
 *
 * Readers are curl processes that read the body to the end and throw it away, so this process
 * only polls `/healthz`. The peak is the kernel's high-water mark (VmHWM), reset before each
 * phase through /proc/<pid>/clear_refs; where that is not allowed, VmRSS polled every ~10 ms.
 */
import { Database } from "bun:sqlite";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIG_LIST_PLANTS } from "./options";
import { cli, fail, fmt, memoryKiB, type Running, startTarget, type Target, target as targetNamed } from "./targets";

const CONCURRENCY = [1, 8] as const;
const POLL_MS = 10;

export interface BigListPhase {
  readers: number;
  /** Peak resident memory during the phase above the idle server's, KiB. */
  growthKiB: number;
  worstHealthzMs: number;
  healthzPolls: number;
  /** Until the last reader has the whole body. */
  seconds: number;
}

export interface BigListFigures {
  idleRssKiB: number;
  bodyBytes: number;
  phases: BigListPhase[];
}

/** One owner with `count` plants, ids 1..count, a tag on every other one; returns its token. */
async function seedBigOwner(databasePath: string, count: number): Promise<string> {
  // The CLI creates the file with its schema, the user and the token.
  const token = await cli(["token", "create", "--user", "bench-big"], databasePath);
  const db = new Database(databasePath);
  const owner = (db.query("SELECT id FROM users WHERE name = 'bench-big'").get() as { id: number }).id;
  const insert = db.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, ?)");
  db.transaction(() => {
    for (let id = 1; id <= count; id++) insert.run(owner, id, `Plant ${id}`, id % 2 === 0 ? "seed" : null);
  })();
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  return token;
}

/** Sets the process's VmHWM back to its current RSS; false when the kernel does not allow it. */
async function resetPeak(pid: number): Promise<boolean> {
  try {
    await Bun.write(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/** Reads the whole list with curl; resolves to the body's size, failing on anything but a full 200. */
async function readWholeList(url: string, token: string): Promise<number> {
  const proc = Bun.spawn(
    [
      "curl",
      "-sS",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code} %{size_download}",
      "-H",
      `authorization: Bearer ${token}`,
      `${url}/plants`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  const [status, size] = out.trim().split(" ");
  if (code !== 0 || status !== "200") fail(`big list: curl got ${out} (exit ${code}) ${err.trim()}`);
  return Number(size);
}

async function phase(server: Running, token: string, readers: number, idleRssKiB: number) {
  const exact = await resetPeak(server.pid);
  let polledPeak = 0;
  let worst = 0;
  let polls = 0;
  let reading = true;
  const poller = (async () => {
    while (reading) {
      const started = performance.now();
      const response = await fetch(`${server.url}/healthz`);
      await response.arrayBuffer();
      if (response.status !== 200) fail(`big list: /healthz answered ${response.status}`);
      worst = Math.max(worst, performance.now() - started);
      polls++;
      if (!exact) polledPeak = Math.max(polledPeak, await memoryKiB(server.pid, "VmRSS"));
      await Bun.sleep(POLL_MS);
    }
  })();
  const started = performance.now();
  const sizes = await Promise.all(Array.from({ length: readers }, () => readWholeList(server.url, token)));
  const seconds = (performance.now() - started) / 1000;
  reading = false;
  await poller;
  const peak = exact ? await memoryKiB(server.pid, "VmHWM") : polledPeak;
  const phase: BigListPhase = {
    readers,
    growthKiB: peak - idleRssKiB,
    worstHealthzMs: worst,
    healthzPolls: polls,
    seconds,
  };
  return { phase, sizes };
}

/** The service against the like-for-like baseline, which writes the same access-log lines. */
const SIDES = ["service", "baseline"] as const;
type Side = (typeof SIDES)[number];

async function measure(target: Target, databasePath: string, token: string): Promise<BigListFigures> {
  const server = await startTarget(target, databasePath);
  try {
    // Warm the paths the phases use, with small answers, before the idle level is read.
    for (let i = 0; i < 20; i++) {
      await (await fetch(`${server.url}/healthz`)).arrayBuffer();
      await (
        await fetch(`${server.url}/plants?limit=20`, { headers: { authorization: `Bearer ${token}` } })
      ).arrayBuffer();
    }
    const idleRssKiB = await memoryKiB(server.pid, "VmRSS");
    const phases: BigListPhase[] = [];
    const sizes = new Set<number>();
    for (const readers of CONCURRENCY) {
      const result = await phase(server, token, readers, idleRssKiB);
      for (const size of result.sizes) sizes.add(size);
      phases.push(result.phase);
      console.log(
        `big list ${target.name.padEnd(8)} ${readers} reader(s): peak RSS +${fmt(result.phase.growthKiB / 1024, 1)} MiB, worst /healthz ${fmt(result.phase.worstHealthzMs, 1)} ms over ${result.phase.healthzPolls} polls, ${fmt(result.phase.seconds, 2)} s`,
      );
    }
    if (sizes.size !== 1) fail(`big list: ${target.name} answered bodies of different sizes: ${[...sizes].join(", ")}`);
    return { idleRssKiB, bodyBytes: [...sizes][0] as number, phases };
  } finally {
    await server.stop();
  }
}

/** The service and the baseline on copies of one seeded file; fails when their bodies differ in size. */
export async function bigListScenario(dir: string, plants = BIG_LIST_PLANTS) {
  const seeded = join(dir, "big-list.sqlite");
  const token = await seedBigOwner(seeded, plants);
  const figures = {} as Record<Side, BigListFigures>;
  for (const side of SIDES) {
    const path = join(dir, `big-list-${side}.sqlite`);
    copyFileSync(seeded, path);
    figures[side] = await measure(targetNamed(side), path, token);
  }
  if (figures.service.bodyBytes !== figures.baseline.bodyBytes) {
    fail(`big list: the service sent ${figures.service.bodyBytes} bytes, the baseline ${figures.baseline.bodyBytes}`);
  }
  return figures;
}

/** The scenario's rows for the bench's Markdown table (service / baseline columns). */
export function bigListRows(figures: Record<Side, BigListFigures>, plants = BIG_LIST_PLANTS): string[] {
  const rows: string[] = [];
  const mib = (kib: number) => `${fmt(kib / 1024, 1)} MiB`;
  for (const [i, readers] of CONCURRENCY.entries()) {
    const s = figures.service.phases[i] as BigListPhase;
    const b = figures.baseline.phases[i] as BigListPhase;
    const what = `${readers} × GET /plants of ${fmt(plants)}`;
    rows.push(`| ${what}: peak RSS growth | ${mib(s.growthKiB)} | ${mib(b.growthKiB)} |`);
    rows.push(`| ${what}: worst /healthz | ${fmt(s.worstHealthzMs, 1)} ms | ${fmt(b.worstHealthzMs, 1)} ms |`);
    rows.push(`| ${what}: time to read all | ${fmt(s.seconds, 2)} s | ${fmt(b.seconds, 2)} s |`);
  }
  return rows;
}

export function printBigList(figures: Record<Side, BigListFigures>, plants = BIG_LIST_PLANTS) {
  console.log(
    `\nBig list: one owner with ${fmt(plants)} plants (${fmt(figures.service.bodyBytes / 2 ** 20, 1)} MiB of JSON), read whole by curl while /healthz is polled every ${POLL_MS} ms; growth is above the idle RSS (service ${fmt(figures.service.idleRssKiB / 1024, 1)} MiB, baseline ${fmt(figures.baseline.idleRssKiB / 1024, 1)} MiB); the baseline builds the whole answer at once\n`,
  );
  console.log("| big list | service | baseline |");
  console.log("| --- | ---: | ---: |");
  for (const row of bigListRows(figures, plants)) console.log(row);
}

if (import.meta.main) {
  if (Bun.spawnSync(["which", "curl"]).exitCode !== 0) fail("curl is not installed");
  const dir = mkdtempSync(join(tmpdir(), "plant-store-big-list-"));
  try {
    printBigList(await bigListScenario(dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
