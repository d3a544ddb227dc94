/**
 * `bun run bench`: the service against the no-framework baseline (bench/baseline/), same
 * machine, same load, alternating rounds, every figure as a ratio to the baseline.
 *
 * Then, the service alone: the read and page scenarios on a 1,000,000-plant store against the
 * read scenario on a 2,000-plant one (bench/large-store.ts), and the big-list scenario
 * (bench/big-list.ts: one owner's 1,000,000 plants read whole while /healthz is polled).
 * Options: bench/options.ts. With `--engine postgres` (or BENCH_ENGINE=postgres), the same
 * scenarios on PostgreSQL instead (bench/postgres.ts).
 *
 * The machine is shared and noisy, so each ratio is the median of per-round ratios: in a
 * round the service and the baseline run back to back (their order alternating), so both
 * see much the same background load (bench/rounds.ts).
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bigListScenario, printBigList } from "./big-list";
import { largeStoreCheck, largeStoreVerdicts, printLargeStore } from "./large-store";
import { BIG_LIST, CONNECTIONS, ENGINE, LARGE, ROUNDS, SECONDS } from "./options";
import {
  errorCount,
  type Figure,
  figure,
  mark,
  pairedRatio,
  type Results,
  ratio,
  readyForLoad,
  runRounds,
  SCENARIOS,
  type Scenario,
  SEED_PER_USER,
  type TokenPair,
} from "./rounds";
import { cli, fail, fmt, median, peakRssKiB, type Running, startTarget, TARGETS, type Target } from "./targets";
import { wrk } from "./wrk";

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

const TAG_INDEX = "plants_owner_tag_id_name_idx";

/**
 * Whether each side's store carries the tag filter's index, which every create and delete
 * also updates: the write ratio is a fair one only when both do.
 */
function tagIndexNote(paths: Record<Target["name"], string>): string {
  const has = (path: string) => {
    const db = new Database(path, { readonly: true });
    const found = db.query("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?").get(TAG_INDEX) !== null;
    db.close();
    return found ? "has" : "lacks";
  };
  return `Writes and the tag index: the service's store ${has(paths.service)} ${TAG_INDEX} (owner_id, tag, id, name), the baseline's ${has(paths.baseline)} it (it applies the same drizzle/ migrations, though it does not filter by tag), so each create and delete updates it on ${has(paths.service) === has(paths.baseline) ? "both sides alike" : "one side only"}.`;
}

async function main() {
  if (Bun.spawnSync(["which", "wrk"]).exitCode !== 0) fail("wrk is not installed (apt-get install -y wrk)");
  if (BIG_LIST && Bun.spawnSync(["which", "curl"]).exitCode !== 0) fail("curl is not installed (or BENCH_BIG_LIST=0)");
  const dir = mkdtempSync(join(tmpdir(), "plant-store-bench-"));
  try {
    const paths = { service: join(dir, "service.sqlite"), baseline: join(dir, "baseline.sqlite") };
    const tokens: Record<string, TokenPair> = {};
    const running: Record<string, Running> = {};
    for (const target of TARGETS) {
      const path = paths[target.name];
      const a = await cli(["token", "create", "--user", "bench-a"], path);
      const b = await cli(["token", "create", "--user", "bench-b"], path);
      tokens[target.name] = [a, b];
      running[target.name] = await startTarget(target, path);
      await readyForLoad(target.name, (running[target.name] as Running).url, [a, b]);
    }

    const results: Results<Target["name"]> = await runRounds(
      TARGETS.map((target) => ({
        name: target.name,
        run: (scenario, idBase) =>
          wrk((running[target.name] as Running).url, scenario, [...(tokens[target.name] as TokenPair), String(idBase)]),
      })),
    );
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
    const m = (target: Target["name"], scenario: Scenario, key: Figure) => figure(results, target, scenario, key);
    for (const scenario of SCENARIOS) {
      const rps = pairedRatio(results, "service", "baseline", scenario, "rps");
      const p99 = pairedRatio(results, "service", "baseline", scenario, "p99");
      const non2xx = errorCount(results, "service", scenario);
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

    console.log(`\n${tagIndexNote(paths)}`);

    if (LARGE) {
      const large = await largeStoreCheck(dir);
      printLargeStore(large);
      for (const verdict of largeStoreVerdicts(large)) {
        allMet &&= verdict.met;
        verdicts.push(verdict.line);
      }
    }
    if (BIG_LIST) printBigList(await bigListScenario(dir));
    console.log(`\nTargets:\n  ${verdicts.join("\n  ")}`);
    console.log(allMet ? "\nAll targets met." : "\nSome targets are not met (see above).");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (ENGINE === "postgres") {
  const { postgresBench } = await import("./postgres");
  await postgresBench();
} else {
  await main();
}
