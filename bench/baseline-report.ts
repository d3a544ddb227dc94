/**
 * Table A on SQLite: the service against the like-for-like baseline (bench/baseline/ doing the
 * same request-id, access-log and metrics work), so the gap is what the framework, the ORM and
 * the libraries cost. Ratios are medians of per-round ratios.
 */
import { Database } from "bun:sqlite";
import {
  errorCount,
  type Figure,
  figure,
  mark,
  pairedRatio,
  type Results,
  ratio,
  SCENARIOS,
  type Scenario,
} from "./rounds";
import { fmt, type TargetName } from "./targets";

const MIN_THROUGHPUT = 0.85;
const MAX_P99 = 1.3;
const MAX_RSS = 1.5;
const MAX_COLD_START_MS = 150;

type Side = "service" | "baseline";

/** Prints the table; answers its verdicts and whether all are met. */
export function baselineReport(
  results: Results<TargetName>,
  rss: Record<Side, number>,
  coldStart: Record<Side, number>,
): { verdicts: string[]; allMet: boolean } {
  const verdicts: string[] = [];
  let allMet = true;
  const m = (side: Side, scenario: Scenario, key: Figure, digits = 0) =>
    fmt(figure(results, side, scenario, key), digits);
  console.log(
    "| scenario | service req/s | baseline req/s | ratio | p50 ms service / baseline | p99 ms service / baseline | p99 ratio | service non-2xx |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const scenario of SCENARIOS) {
    const rps = pairedRatio(results, "service", "baseline", scenario, "rps");
    const p99 = pairedRatio(results, "service", "baseline", scenario, "p99");
    const errors = errorCount(results, "service", scenario);
    console.log(
      `| ${scenario} | ${m("service", scenario, "rps")} | ${m("baseline", scenario, "rps")} | **${fmt(rps, 2)}×** | ${m("service", scenario, "p50", 2)} / ${m("baseline", scenario, "p50", 2)} | ${m("service", scenario, "p99", 2)} / ${m("baseline", scenario, "p99", 2)} | **${fmt(p99, 2)}×** | ${errors} |`,
    );
    const met = rps >= MIN_THROUGHPUT && p99 <= MAX_P99 && errors === 0;
    allMet &&= met;
    verdicts.push(
      `${scenario}, service vs baseline: req/s ${fmt(rps, 2)}× (≥ ${MIN_THROUGHPUT}), p99 ${fmt(p99, 2)}× (≤ ${MAX_P99}), errors ${errors} → ${mark(met)}`,
    );
  }
  const rssRatio = ratio(rss.service, rss.baseline);
  console.log(
    `| peak RSS | ${fmt(rss.service / 1024, 1)} MiB | ${fmt(rss.baseline / 1024, 1)} MiB | **${fmt(rssRatio, 2)}×** | | | | |`,
  );
  console.log(
    `| cold start | ${fmt(coldStart.service)} ms | ${fmt(coldStart.baseline)} ms | ${fmt(ratio(coldStart.service, coldStart.baseline), 2)}× | | | | |`,
  );
  const rssMet = rssRatio <= MAX_RSS;
  const coldMet = coldStart.service <= MAX_COLD_START_MS;
  allMet &&= rssMet && coldMet;
  verdicts.push(`peak RSS, service vs baseline: ${fmt(rssRatio, 2)}× (≤ ${MAX_RSS}) → ${mark(rssMet)}`);
  verdicts.push(`cold start, service: ${fmt(coldStart.service)} ms (≤ ${MAX_COLD_START_MS}) → ${mark(coldMet)}`);
  return { verdicts, allMet };
}

const TAG_INDEX = "plants_owner_tag_id_name_idx";

/**
 * Whether each store carries the tag filter's index, which every create and delete also
 * updates: the write ratios are fair ones only when all do.
 */
export function tagIndexNote(paths: Record<TargetName, string>): string {
  const has = (path: string) => {
    const db = new Database(path, { readonly: true });
    const found = db.query("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?").get(TAG_INDEX) !== null;
    db.close();
    return found;
  };
  const found = Object.entries(paths).map(([name, path]) => [name, has(path)] as const);
  const lacking = found.filter(([, present]) => !present).map(([name]) => name);
  return `Writes and the tag index ${TAG_INDEX} (owner_id, tag, id, name): ${
    lacking.length === 0
      ? "every store has it (the baseline and the floor apply the same drizzle/ migrations, though they do not filter by tag), so each create and delete updates it on every side alike."
      : `the stores of ${lacking.join(", ")} lack it, so creates and deletes update it on some sides only.`
  }`;
}
