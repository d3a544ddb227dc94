/**
 * Table B: the service against the bare floor (bench/baseline/ with BASELINE_BARE=1: no
 * framework, no access log, no metrics, no request ids), so what the service costs in all,
 * framework and observability together. Every ratio is to the floor; req/s and p99 are the
 * median of per-round ratios. Shared by both engines.
 */
import { errorCount, figure, mark, pairedRatio, type Results, ratio, SCENARIOS, type Scenario } from "./rounds";
import { fmt } from "./targets";

export interface FloorTargets<Side extends string> {
  /** The least req/s ratio per side and scenario; where none is set, only p99 and errors are judged. */
  minRps: Partial<Record<Side, Partial<Record<Scenario, number>>>>;
  maxP99: number;
  maxRss: number;
  maxColdStart: number;
}

/**
 * Issue 13's targets against the bare floor, the same on both engines, for the service with its
 * default settings (`side`, the access log on) and with LOG_LEVEL=warn (`warnSide`). Writes may
 * beat the floor: the service commits durably with group commit, the floor one write at a time.
 */
export function floorTargets<Side extends string>(side: Side, warnSide: Side): FloorTargets<Side> {
  return {
    minRps: { [side]: { read: 0.8, write: 1.3, mix: 1.0 }, [warnSide]: { read: 0.9 } } as FloorTargets<Side>["minRps"],
    maxP99: 1.3,
    maxRss: 1.3,
    maxColdStart: 2,
  };
}

export interface FloorComparison<Name extends string, Side extends Name, Floor extends Name> {
  results: Results<Name>;
  floor: Floor;
  /** The contenders compared with the floor, one column each. */
  sides: Side[];
  /** Peak RSS in KiB. */
  rss: Record<Side | Floor, number>;
  /** Cold start in ms, through bun run. */
  coldStart: Record<Side | Floor, number>;
}

const mib = (kib: number) => `${fmt(kib / 1024, 1)} MiB`;

/** Prints the table; answers the verdicts against `targets` (none without them) and whether all are met. */
export function floorReport<Name extends string, Side extends Name, Floor extends Name>(
  { results, floor, sides, rss, coldStart }: FloorComparison<Name, Side, Floor>,
  targets?: FloorTargets<Side>,
): { verdicts: string[]; allMet: boolean } {
  const each = (cell: (side: Side) => string) => sides.map(cell).join(" | ");
  const slash = (cell: (side: Side) => string) => sides.map(cell).join(" / ");
  console.log(
    `| scenario | ${floor} req/s | ${each((side) => `${side} req/s | ratio`)} | p99 ms ${floor} / ${slash((side) => side)} | p99 ratio ${slash((side) => side)} | non-2xx + socket errors ${slash((side) => side)} |`,
  );
  console.log(`| --- | ---: | ${each(() => "---: | ---:")} | ---: | ---: | ---: |`);
  const verdicts: string[] = [];
  let allMet = true;
  for (const scenario of SCENARIOS) {
    const m = (name: Name, key: "rps" | "p99", digits = 0) => fmt(figure(results, name, scenario, key), digits);
    const paired = (side: Side, key: "rps" | "p99") => pairedRatio(results, side, floor, scenario, key);
    console.log(
      `| ${scenario} | ${m(floor, "rps")} | ${each((side) => `${m(side, "rps")} | **${fmt(paired(side, "rps"), 2)}×**`)} | ${m(floor, "p99", 2)} / ${slash((side) => m(side, "p99", 2))} | ${slash((side) => `${fmt(paired(side, "p99"), 2)}×`)} | ${slash((side) => String(errorCount(results, side, scenario)))} |`,
    );
    if (!targets) continue;
    for (const side of sides) {
      const rps = paired(side, "rps");
      const p99 = paired(side, "p99");
      const errors = errorCount(results, side, scenario);
      const minRps = targets.minRps[side]?.[scenario];
      const met = (minRps === undefined || rps >= minRps) && p99 <= targets.maxP99 && errors === 0;
      allMet &&= met;
      const rpsPart = minRps === undefined ? "" : `req/s ${fmt(rps, 2)}× (≥ ${minRps}), `;
      verdicts.push(
        `${scenario}, ${side} vs ${floor}: ${rpsPart}p99 ${fmt(p99, 2)}× (≤ ${targets.maxP99}), errors ${errors} → ${mark(met)}`,
      );
    }
  }
  const rows = [
    { label: "peak RSS", values: rss, show: mib, limit: targets?.maxRss },
    {
      label: "cold start (bun run)",
      values: coldStart,
      show: (ms: number) => `${fmt(ms)} ms`,
      limit: targets?.maxColdStart,
    },
  ];
  for (const { label, values, show, limit } of rows) {
    const of = (side: Side) => ratio(values[side], values[floor]);
    console.log(
      `| ${label} | ${show(values[floor])} | ${each((side) => `${show(values[side])} | **${fmt(of(side), 2)}×**`)} | | | |`,
    );
    if (limit === undefined) continue;
    for (const side of sides) {
      const met = of(side) <= limit;
      allMet &&= met;
      verdicts.push(`${label}, ${side} vs ${floor}: ${fmt(of(side), 2)}× (≤ ${limit}) → ${mark(met)}`);
    }
  }
  return { verdicts, allMet };
}
