/**
 * Table E: both floors, the service and the usual pick from one run, every ratio to the bare
 * floor (a plain plants/tokens schema, no framework, no observability, synchronous=NORMAL). The
 * project's floor is the same code on the service's own schema (its migrations): between the two
 * floors lies what the schema costs; between the project's floor and the service, what the
 * framework, the libraries and the service's own work cost. The service runs with its defaults
 * (durable writes, the access log at info) and the rate limit off; with it on, beside. Ratios are
 * the median of per-round ratios; CPU is the serving process's (all threads) per request.
 */
import { figure, mark, pairedRatio, type Results, ratio, SCENARIOS } from "./rounds";
import { fmt } from "./targets";

type Side = "bare" | "floor" | "service" | "service-limit" | "fastify";

const LABELS: Record<Side, string> = {
  bare: "bare floor (plain schema)",
  floor: "project floor (service schema)",
  service: "service (limit off)",
  "service-limit": "service, limit on",
  fastify: "Fastify + better-sqlite3",
};

/** Issue 42's targets, against the bare floor and the usual pick. */
const TARGETS = {
  overFastify: 2.0,
  overBare: { read: 0.7, write: 1.1, mix: 0.7 },
  mixP99: 1.5,
  rss: 1.5,
};

export function twoFloorsReport<Name extends string>(
  results: Results<Name | Side>,
  rss: Record<Name | Side, number>,
): { verdicts: string[]; allMet: boolean } {
  const sides = Object.keys(LABELS) as Side[];
  console.log(
    "| contender | read req/s | write req/s | mix req/s | CPU µs per request, read / write / mix | p99 ms, read / write / mix | peak RSS MiB |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const side of sides) {
    const rps = SCENARIOS.map((scenario) => {
      const value = fmt(figure(results, side, scenario, "rps"));
      return side === "bare" ? value : `${value} (${fmt(pairedRatio(results, side, "bare", scenario, "rps"), 2)}×)`;
    });
    const cpu = SCENARIOS.map((scenario) => fmt(figure(results, side, scenario, "cpuUs"), 1)).join(" / ");
    const p99 = SCENARIOS.map((scenario) => fmt(figure(results, side, scenario, "p99"), 1)).join(" / ");
    const memory = fmt(rss[side] / 1024, 1);
    const memoryRatio = side === "bare" ? "" : ` (${fmt(ratio(rss[side], rss.bare), 2)}×)`;
    console.log(`| ${LABELS[side]} | ${rps.join(" | ")} | ${cpu} | ${p99} | ${memory}${memoryRatio} |`);
  }
  const schemaCost = SCENARIOS.map((scenario) => {
    const cpu = figure(results, "floor", scenario, "cpuUs") - figure(results, "bare", scenario, "cpuUs");
    return `${scenario} ${fmt(pairedRatio(results, "floor", "bare", scenario, "rps"), 2)}× (${cpu >= 0 ? "+" : ""}${fmt(cpu, 1)} µs CPU)`;
  });
  console.log(`\nWhat the schema costs (project floor against bare floor, req/s): ${schemaCost.join(", ")}`);

  const verdicts: string[] = [];
  let allMet = true;
  const judge = (line: string, met: boolean) => {
    allMet &&= met;
    verdicts.push(`${line} → ${mark(met)}`);
  };
  for (const scenario of SCENARIOS) {
    const overFastify = pairedRatio(results, "service", "fastify", scenario, "rps");
    judge(`${scenario}, service vs Fastify: ${fmt(overFastify, 2)}× (≥ ${TARGETS.overFastify})`, overFastify >= 2);
    const overBare = pairedRatio(results, "service", "bare", scenario, "rps");
    const least = TARGETS.overBare[scenario];
    judge(`${scenario}, service vs bare floor: ${fmt(overBare, 2)}× (≥ ${least})`, overBare >= least);
  }
  const mixP99 = pairedRatio(results, "service", "bare", "mix", "p99");
  judge(`mix p99, service vs bare floor: ${fmt(mixP99, 2)}× (≤ ${TARGETS.mixP99})`, mixP99 <= TARGETS.mixP99);
  const memory = ratio(rss.service, rss.bare);
  judge(`peak RSS, service vs bare floor: ${fmt(memory, 2)}× (≤ ${TARGETS.rss})`, memory <= TARGETS.rss);
  return { verdicts, allMet };
}
