/**
 * `bun run bench`: the service against the no-framework baseline (bench/baseline/), same
 * machine, same load, alternating rounds, every figure as a ratio to the baseline.
 *
 * Options (environment): BENCH_ROUNDS (5), BENCH_SECONDS per run (4), BENCH_CONNECTIONS (32),
 * BENCH_LARGE=0 to skip the 1,000,000-plant read check, BENCH_BIG_LIST=0 to skip the big-list
 * scenario (bench/big-list.ts: one owner's 1,000,000 plants read whole while /healthz is polled).
 *
 * The machine is shared and noisy, so each ratio is the median of per-round ratios: in a
 * round the service and the baseline run back to back (their order alternating), so both
 * see much the same background load.
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bigListScenario, printBigList } from "./big-list";
import { runBehaviourChecks } from "./checks";
import { cli, fail, fmt, median, peakRssKiB, ROOT, type Running, startTarget, TARGETS, type Target } from "./targets";

const LUA_DIR = join(ROOT, "bench", "lua");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const LARGE = process.env.BENCH_LARGE !== "0";
const BIG_LIST = process.env.BENCH_BIG_LIST !== "0";
const SEED_PER_USER = 1000;
const SCENARIOS = ["read", "write", "mix"] as const;
type Scenario = (typeof SCENARIOS)[number];

async function seed(url: string, token: string, count: number) {
  const ids = Array.from({ length: count }, (_, i) => i + 1);
  for (let start = 0; start < ids.length; start += 100) {
    const responses = await Promise.all(
      ids.slice(start, start + 100).map((id) =>
        fetch(`${url}/plants`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ id, name: `Seed ${id}`, tag: "seed" }),
        }),
      ),
    );
    if (responses.some((r) => r.status !== 200)) fail(`seeding ${url} failed`);
  }
}

interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

const toMs = (value: string, unit: string) => Number(value) * ({ us: 0.001, ms: 1, s: 1000 }[unit] ?? Number.NaN);

async function wrk(url: string, scenario: Scenario, tokens: [string, string], idBase: number, seconds = SECONDS) {
  const proc = Bun.spawn(
    [
      "wrk",
      "-t2",
      `-c${CONNECTIONS}`,
      `-d${seconds}s`,
      "--latency",
      "-s",
      join(LUA_DIR, `${scenario}.lua`),
      url,
      "--",
      tokens[0],
      tokens[1],
      String(idBase),
    ],
    { env: { ...process.env, BENCH_LUA_DIR: LUA_DIR }, stdout: "pipe", stderr: "pipe" },
  );
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if ((await proc.exited) !== 0) fail(`wrk failed: ${err}`);
  const latency = (p: string) => {
    const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)$`, "m").exec(out);
    return match ? toMs(match[1] as string, match[2] as string) : Number.NaN;
  };
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]),
    p50: latency("50"),
    p99: latency("99"),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    errors: socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
  } satisfies WrkResult;
}

/** Launch to the first successful authenticated request, in ms. */
async function coldStart(target: Target, databasePath: string, token: string): Promise<number> {
  const started = performance.now();
  const server = await startTarget(target, databasePath);
  const response = await fetch(`${server.url}/plants?limit=1`, { headers: { authorization: `Bearer ${token}` } });
  const elapsed = performance.now() - started;
  await server.stop();
  if (response.status !== 200) fail(`${target.name}: the cold-start request got ${response.status}, not 200`);
  return elapsed;
}

/** Writes plants straight into the file: 1,000 users with `perUser` plants each. */
function seedLargeStore(databasePath: string, users: number, perUser: number) {
  const db = new Database(databasePath);
  db.run("PRAGMA journal_mode = WAL");
  const insertUser = db.prepare("INSERT INTO users (name, created_at) VALUES (?, 0) RETURNING id");
  const insertPlant = db.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, 'seed')");
  db.transaction(() => {
    for (let u = 0; u < users; u++) {
      const { id } = insertUser.get(`filler-${u}`) as { id: number };
      for (let p = 1; p <= perUser; p++) insertPlant.run(id, p, `Filler ${p}`);
    }
  })();
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
}

function ratio(value: number, baseline: number) {
  return baseline > 0 ? value / baseline : Number.NaN;
}

const mark = (ok: boolean) => (ok ? "met" : "NOT met");

async function main() {
  if (Bun.spawnSync(["which", "wrk"]).exitCode !== 0) fail("wrk is not installed (apt-get install -y wrk)");
  if (BIG_LIST && Bun.spawnSync(["which", "curl"]).exitCode !== 0) fail("curl is not installed (or BENCH_BIG_LIST=0)");
  const dir = mkdtempSync(join(tmpdir(), "plant-store-bench-"));
  try {
    const paths = { service: join(dir, "service.sqlite"), baseline: join(dir, "baseline.sqlite") };
    const tokens: Record<string, [string, string]> = {};
    const running: Record<string, Running> = {};
    for (const target of TARGETS) {
      const path = paths[target.name];
      const a = await cli(["token", "create", "--user", "bench-a"], path);
      const b = await cli(["token", "create", "--user", "bench-b"], path);
      tokens[target.name] = [a, b];
      running[target.name] = await startTarget(target, path);
      const server = running[target.name] as Running;
      await seed(server.url, a, SEED_PER_USER);
      await seed(server.url, b, SEED_PER_USER);
      const failures = await runBehaviourChecks(server.url, a, b);
      if (failures.length > 0) fail(`${target.name} fails the behaviour checks:\n  ${failures.join("\n  ")}`);
      console.log(`${target.name}: behaviour checks pass; ${2 * SEED_PER_USER} plants seeded`);
      await wrk(server.url, "read", [a, b], 0, 1);
    }

    const results: Record<Target["name"], Record<Scenario, WrkResult[]>> = {
      service: { read: [], write: [], mix: [] },
      baseline: { read: [], write: [], mix: [] },
    };
    let idBase = 1_000_000_000;
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 === 1 ? TARGETS : [...TARGETS].reverse();
      for (const scenario of SCENARIOS) {
        for (const target of order) {
          idBase += 1_000_000_000;
          const result = await wrk(
            (running[target.name] as Running).url,
            scenario,
            tokens[target.name] as [string, string],
            idBase,
          );
          results[target.name][scenario].push(result);
          console.log(
            `round ${round} ${scenario.padEnd(5)} ${target.name.padEnd(8)} ${fmt(result.rps).padStart(7)} req/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms  non-2xx ${result.non2xx}  socket errors ${result.errors}`,
          );
        }
      }
    }
    const rss: Record<string, number> = {};
    for (const target of TARGETS) {
      const server = running[target.name] as Running;
      rss[target.name] = await peakRssKiB(server.pid);
      await server.stop();
    }

    const cold: Record<string, number> = {};
    for (const target of TARGETS) {
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        times.push(await coldStart(target, paths[target.name], (tokens[target.name] as [string, string])[0]));
      }
      cold[target.name] = median(times);
    }

    const rows: string[] = [];
    const verdicts: string[] = [];
    let allMet = true;
    const m = (target: Target["name"], scenario: Scenario, key: keyof WrkResult) =>
      median(results[target][scenario].map((r) => r[key]));
    /** The median over rounds of service / baseline within each round. */
    const pairedRatio = (scenario: Scenario, key: keyof WrkResult) =>
      median(results.service[scenario].map((r, i) => ratio(r[key], (results.baseline[scenario][i] as WrkResult)[key])));
    for (const scenario of SCENARIOS) {
      const rps = pairedRatio(scenario, "rps");
      const p99 = pairedRatio(scenario, "p99");
      const non2xx = results.service[scenario].reduce((sum, r) => sum + r.non2xx + r.errors, 0);
      rows.push(
        `| ${scenario} | ${fmt(m("service", scenario, "rps"))} | ${fmt(m("baseline", scenario, "rps"))} | **${fmt(rps, 2)}×** | ${fmt(m("service", scenario, "p50"), 2)} / ${fmt(m("baseline", scenario, "p50"), 2)} | ${fmt(m("service", scenario, "p99"), 2)} / ${fmt(m("baseline", scenario, "p99"), 2)} | **${fmt(p99, 2)}×** | ${non2xx} |`,
      );
      const met = rps >= 0.85 && p99 <= 1.3 && non2xx === 0;
      allMet &&= met;
      verdicts.push(
        `${scenario}: throughput ${fmt(rps, 2)}× (≥ 0.85), p99 ${fmt(p99, 2)}× (≤ 1.3), errors ${non2xx} → ${mark(met)}`,
      );
    }
    const rssRatio = ratio(rss.service as number, rss.baseline as number);
    const coldMet = (cold.service as number) <= 150;
    allMet &&= rssRatio <= 1.5 && coldMet;
    verdicts.push(`peak RSS ${fmt(rssRatio, 2)}× (≤ 1.5) → ${mark(rssRatio <= 1.5)}`);
    verdicts.push(`cold start ${fmt(cold.service as number)} ms (≤ 150) → ${mark(coldMet)}`);

    console.log(
      `\nPlant Store vs baseline — ${ROUNDS} alternating rounds, ${SECONDS} s each, wrk -t2 -c${CONNECTIONS}, ${2 * SEED_PER_USER} plants seeded; figures are medians, ratios the median of per-round ratios`,
    );
    console.log(
      `service: synchronous=FULL with group commit; baseline: plain Bun.serve + bun:sqlite, synchronous=NORMAL\n`,
    );
    console.log(
      "| scenario | service req/s | baseline req/s | ratio | p50 ms service / baseline | p99 ms service / baseline | p99 ratio | service non-2xx |",
    );
    console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const row of rows) console.log(row);
    console.log(
      `| peak RSS | ${fmt((rss.service as number) / 1024, 1)} MiB | ${fmt((rss.baseline as number) / 1024, 1)} MiB | **${fmt(rssRatio, 2)}×** | | | | |`,
    );
    console.log(
      `| cold start | ${fmt(cold.service as number)} ms | ${fmt(cold.baseline as number)} ms | ${fmt(ratio(cold.service as number, cold.baseline as number), 2)}× | | | | |`,
    );

    if (LARGE) {
      const large = await largeStoreCheck(dir);
      allMet &&= large.ratio >= 1 / 1.15;
      verdicts.push(
        `read at 1,000,000 plants: ${fmt(large.large)} vs ${fmt(large.small)} req/s at ${2 * SEED_PER_USER} plants = ${fmt(large.ratio, 2)}× (≥ 0.87, i.e. within 1.15×) → ${mark(large.ratio >= 1 / 1.15)}`,
      );
    }
    if (BIG_LIST) printBigList(await bigListScenario(dir));
    console.log(`\nTargets:\n  ${verdicts.join("\n  ")}`);
    console.log(allMet ? "\nAll targets met." : "\nSome targets are not met (see above).");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The read scenario on a store of 2,000 plants and on one of 1,000,000, alternating. */
async function largeStoreCheck(dir: string) {
  const service = TARGETS[0] as Target;
  const small = join(dir, "small.sqlite");
  const large = join(dir, "large.sqlite");
  const tokens: Record<string, [string, string]> = {};
  for (const path of [small, large]) {
    const a = await cli(["token", "create", "--user", "bench-a"], path);
    const b = await cli(["token", "create", "--user", "bench-b"], path);
    tokens[path] = [a, b];
  }
  // 1,000 users of 1,000 plants each: 998 filler users written directly, plus the two bench users.
  seedLargeStore(large, 998, SEED_PER_USER);
  const figures: Record<string, number[]> = { [small]: [], [large]: [] };
  const servers: Record<string, Running> = {};
  for (const path of [small, large]) {
    servers[path] = await startTarget(service, path);
    const [a, b] = tokens[path] as [string, string];
    await seed((servers[path] as Running).url, a, SEED_PER_USER);
    await seed((servers[path] as Running).url, b, SEED_PER_USER);
    await wrk((servers[path] as Running).url, "read", [a, b], 0, 1);
  }
  const count = new Database(large, { readonly: true });
  const total = (count.query("SELECT count(*) AS n FROM plants").get() as { n: number }).n;
  count.close();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const path of round % 2 === 1 ? [small, large] : [large, small]) {
      const result = await wrk((servers[path] as Running).url, "read", tokens[path] as [string, string], 0);
      figures[path]?.push(result.rps);
      console.log(
        `large-store round ${round} ${path === small ? "2,000 plants" : `${fmt(total)} plants`}: ${fmt(result.rps)} req/s`,
      );
    }
  }
  for (const server of Object.values(servers)) await server.stop();
  const smallRps = median(figures[small] ?? []);
  const largeRps = median(figures[large] ?? []);
  const paired = median((figures[large] ?? []).map((rps, i) => rps / (figures[small]?.[i] as number)));
  return { small: smallRps, large: largeRps, ratio: paired };
}

await main();
