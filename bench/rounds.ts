/**
 * The wrk part of the bench, whatever the engine: getting a running target ready for load
 * (seeded, behaviour-checked, warmed), the alternating rounds of the read, write and mix
 * scenarios, and the figures read from them. The machine is shared and noisy, so a ratio is the
 * median of per-round ratios: within a round the contenders run back to back (their order
 * reversed every other round), so they see much the same background load.
 */
import { runBehaviourChecks } from "./checks";
import { ROUNDS } from "./options";
import { fail, fmt, median, seedOverHttp } from "./targets";
import { type WrkResult, wrk } from "./wrk";

export const SEED_PER_USER = 1000;
export const SCENARIOS = ["read", "write", "mix"] as const;
export type Scenario = (typeof SCENARIOS)[number];
export type Figure = "rps" | "p50" | "p99";

/** Two users' tokens: wrk's threads alternate between them. */
export type TokenPair = [string, string];

/** One side of a comparison: runs a scenario's load once, its new plants' ids starting past `idBase`. */
export interface Contender<Name extends string> {
  name: Name;
  run(scenario: Scenario, idBase: number): Promise<WrkResult>;
}

export type Results<Name extends string> = Record<Name, Record<Scenario, WrkResult[]>>;

/**
 * Seeds SEED_PER_USER plants per user through the API (unless `seed` is false: another
 * instance on the same database did), runs the behaviour checks, then warms it up for 1 s.
 */
export async function readyForLoad(name: string, url: string, [a, b]: TokenPair, seed = true): Promise<void> {
  if (seed) {
    await seedOverHttp(url, a, SEED_PER_USER);
    await seedOverHttp(url, b, SEED_PER_USER);
  }
  const failures = await runBehaviourChecks(url, a, b);
  if (failures.length > 0) fail(`${name} fails the behaviour checks:\n  ${failures.join("\n  ")}`);
  console.log(
    `${name}: behaviour checks pass; ${seed ? `${2 * SEED_PER_USER} plants seeded` : "plants seeded through another instance"}`,
  );
  await wrk(url, "read", [a, b, "0"], 1);
}

/** Every scenario for every contender, ROUNDS times, the contenders' order reversed every other round. */
export async function runRounds<Name extends string>(contenders: Contender<Name>[]): Promise<Results<Name>> {
  const results = Object.fromEntries(
    contenders.map((contender) => [contender.name, { read: [], write: [], mix: [] }]),
  ) as unknown as Results<Name>;
  const width = Math.max(8, ...contenders.map((contender) => contender.name.length));
  // Ids far past the seeded ones, a fresh billion for every run so no two runs collide.
  let idBase = 1_000_000_000;
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 === 1 ? contenders : [...contenders].reverse();
    for (const scenario of SCENARIOS) {
      for (const contender of order) {
        idBase += 1_000_000_000;
        const result = await contender.run(scenario, idBase);
        results[contender.name][scenario].push(result);
        console.log(
          `round ${round} ${scenario.padEnd(5)} ${contender.name.padEnd(width)} ${fmt(result.rps).padStart(7)} req/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms  non-2xx ${result.non2xx}  socket errors ${result.errors}`,
        );
      }
    }
  }
  return results;
}

export function ratio(value: number, baseline: number) {
  return baseline > 0 ? value / baseline : Number.NaN;
}

/** The median over rounds of one contender's figure. */
export const figure = <Name extends string>(results: Results<Name>, name: Name, scenario: Scenario, key: Figure) =>
  median(results[name][scenario].map((r) => r[key]));

/** The median over rounds of `name` / `baseline` within each round. */
export const pairedRatio = <Name extends string>(
  results: Results<Name>,
  name: Name,
  baseline: Name,
  scenario: Scenario,
  key: Figure,
) => median(results[name][scenario].map((r, i) => ratio(r[key], (results[baseline][scenario][i] as WrkResult)[key])));

/** Non-2xx answers and socket errors over every round of a scenario. */
export const errorCount = <Name extends string>(results: Results<Name>, name: Name, scenario: Scenario) =>
  results[name][scenario].reduce((sum, r) => sum + r.non2xx + r.errors, 0);

export const mark = (ok: boolean) => (ok ? "met" : "NOT met");
