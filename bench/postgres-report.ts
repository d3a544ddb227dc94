/**
 * The PostgreSQL bench's tables and target verdicts (bench/postgres.ts): one service instance
 * and two, side by side, each against the baseline of the same rounds; then one instance, with
 * the access log and with LOG_LEVEL=warn, against the bare floor (bench/floor-report.ts), with
 * the same targets as on SQLite.
 */
import { floorReport, floorTargets } from "./floor-report";
import { errorCount, figure, mark, pairedRatio, type Results, ratio, SCENARIOS } from "./rounds";
import { DEFAULT_RATE_LIMIT, fmt } from "./targets";

/** In the order of a round (reversed every other round): the limit on and off back to back. */
export const POSTGRES_CONTENDERS = [
  "baseline",
  "1 instance",
  "1 instance, limit off",
  "floor",
  "1 instance, warn",
  "2 baselines",
  "2 instances",
] as const;
export type PostgresContender = (typeof POSTGRES_CONTENDERS)[number];

/** What the report says about the cluster the figures came from. */
export interface ClusterFacts {
  version: string;
  fsync: string;
  synchronousCommit: string;
  /** Connections each database had open once the load was over, by database name. */
  connections: Record<string, number>;
}

const MIN_THROUGHPUT = 0.85;
/** The default per-token limit may cost at most this share of the limit-off throughput (issue 29). */
const MIN_LIMIT_ON_THROUGHPUT = 0.9;
/** Each side against the baseline with as many processes. */
const PAIRS = [
  ["1 instance", "baseline"],
  ["2 instances", "2 baselines"],
] as const;

const mib = (kib: number) => `${fmt(kib / 1024, 1)} MiB`;

export function postgresReport(
  results: Results<PostgresContender>,
  facts: ClusterFacts,
  rss: { baseline: number; first: number; limitOff: number; second: number; quiet: number; floor: number },
  coldStart: { "1 instance": number; "1 instance, warn": number; floor: number },
  tokensPerUser: number,
): void {
  const connections = Object.entries(facts.connections)
    .map(([database, count]) => `${database} ${count}`)
    .join(", ");
  console.log(
    `PostgreSQL ${facts.version}, one throwaway cluster on this machine: fsync=${facts.fsync}, synchronous_commit=${facts.synchronousCommit}; each side its own database; connections open after the load: ${connections || "none"}`,
  );
  console.log(
    `service: Elysia + Drizzle (bun-sql), default settings, the per-token rate limit on (RATE_LIMIT_PER_MINUTE=${DEFAULT_RATE_LIMIT}, the default); baseline: plain Bun.serve + Bun SQL, the same statements, no rate limit; pools of ${process.env.DB_POOL_SIZE?.trim() || "10 (the DB_POOL_SIZE default)"} connections per process; every side's load turns over ${tokensPerUser} tokens per user\n`,
  );
  console.log(
    "| scenario | baseline req/s | 1 instance req/s | ratio | 2 baselines req/s | 2 instances req/s | ratio | 2 instances / 1 baseline | p99 ms baseline / 1 / 2 baselines / 2 | p99 ratio 1 / 2 | non-2xx + socket errors, service 1 / 2 |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  const verdicts: string[] = [];
  let allMet = true;
  for (const scenario of SCENARIOS) {
    const m = (name: PostgresContender, key: "rps" | "p50" | "p99", digits = 0) =>
      fmt(figure(results, name, scenario, key), digits);
    const paired = (side: PostgresContender, against: PostgresContender, key: "rps" | "p99") =>
      pairedRatio(results, side, against, scenario, key);
    const errors = (name: PostgresContender) => errorCount(results, name, scenario);
    console.log(
      `| ${scenario} | ${m("baseline", "rps")} | ${m("1 instance", "rps")} | **${fmt(paired("1 instance", "baseline", "rps"), 2)}×** | ${m("2 baselines", "rps")} | ${m("2 instances", "rps")} | **${fmt(paired("2 instances", "2 baselines", "rps"), 2)}×** | ${fmt(paired("2 instances", "baseline", "rps"), 2)}× | ${m("baseline", "p99", 2)} / ${m("1 instance", "p99", 2)} / ${m("2 baselines", "p99", 2)} / ${m("2 instances", "p99", 2)} | ${fmt(paired("1 instance", "baseline", "p99"), 2)}× / ${fmt(paired("2 instances", "2 baselines", "p99"), 2)}× | ${errors("1 instance")} / ${errors("2 instances")} |`,
    );
    for (const [side, against] of PAIRS) {
      const rps = paired(side, against, "rps");
      const met = rps >= MIN_THROUGHPUT && errors(side) === 0;
      allMet &&= met;
      verdicts.push(
        `${scenario}, ${side} vs ${against}: throughput ${fmt(rps, 2)}× (≥ ${MIN_THROUGHPUT}), errors ${errors(side)} → ${mark(met)}`,
      );
    }
  }
  console.log(
    `| peak RSS | ${mib(rss.baseline)} | ${mib(rss.first)} | ${fmt(ratio(rss.first, rss.baseline), 2)}× | | ${mib(rss.first)} + ${mib(rss.second)} | | | | | |`,
  );
  allMet = limitReport(results, rss, verdicts) && allMet;
  console.log(
    "\nAgainst the bare floor — floor: the baseline with no access log, metrics or request ids (BASELINE_BARE=1); judged: 1 instance, limit off (the service's defaults but the per-token limit, as on SQLite: one wrk is far past any token's budget), with 1 instance (the limit on) beside it; 1 instance, warn: a third instance with LOG_LEVEL=warn (no request lines); cold start through `bun run start` and `bun run bench:floor:postgres`\n",
  );
  const floor = floorReport<PostgresContender, "1 instance, limit off" | "1 instance" | "1 instance, warn", "floor">(
    {
      results,
      floor: "floor",
      sides: ["1 instance, limit off", "1 instance", "1 instance, warn"],
      rss: {
        "1 instance, limit off": rss.limitOff,
        "1 instance": rss.first,
        "1 instance, warn": rss.quiet,
        floor: rss.floor,
      },
      coldStart: { ...coldStart, "1 instance, limit off": coldStart["1 instance"] },
    },
    floorTargets("1 instance, limit off", "1 instance, warn"),
  );
  verdicts.push(...floor.verdicts);
  allMet &&= floor.allMet;
  console.log(`\nTargets:\n  ${verdicts.join("\n  ")}`);
  console.log(allMet ? "\nAll targets met." : "\nSome targets are not met (see above).");
}

/** One instance with the default per-token limit against one with it off, on the same database and tokens, in the same rounds. */
function limitReport(
  results: Results<PostgresContender>,
  rss: { first: number; limitOff: number },
  verdicts: string[],
): boolean {
  console.log(
    `\nThe per-token limit's cost — 1 instance (RATE_LIMIT_PER_MINUTE=${DEFAULT_RATE_LIMIT}, the default) against a fourth instance on the same database with RATE_LIMIT_PER_MINUTE=0, run back to back in every round\n`,
  );
  console.log(
    "| scenario | limit off req/s | limit on req/s | on / off | p99 ms off / on | p99 on / off | non-2xx + socket errors, on |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  let allMet = true;
  for (const scenario of SCENARIOS) {
    const m = (name: PostgresContender, key: "rps" | "p99", digits = 0) =>
      fmt(figure(results, name, scenario, key), digits);
    const paired = (key: "rps" | "p99") => pairedRatio(results, "1 instance", "1 instance, limit off", scenario, key);
    const errors = errorCount(results, "1 instance", scenario);
    console.log(
      `| ${scenario} | ${m("1 instance, limit off", "rps")} | ${m("1 instance", "rps")} | **${fmt(paired("rps"), 2)}×** | ${m("1 instance, limit off", "p99", 2)} / ${m("1 instance", "p99", 2)} | ${fmt(paired("p99"), 2)}× | ${errors} |`,
    );
    const met = paired("rps") >= MIN_LIMIT_ON_THROUGHPUT && errors === 0;
    allMet &&= met;
    verdicts.push(
      `${scenario}, limit on vs off: throughput ${fmt(paired("rps"), 2)}× (≥ ${MIN_LIMIT_ON_THROUGHPUT}), errors ${errors} → ${mark(met)}`,
    );
  }
  console.log(
    `| peak RSS | ${mib(rss.limitOff)} | ${mib(rss.first)} | ${fmt(ratio(rss.first, rss.limitOff), 2)}× | | | |`,
  );
  return allMet;
}
