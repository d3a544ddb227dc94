/**
 * The wrk part of the bench, whatever the engine: getting a running target ready for load
 * (seeded, behaviour-checked, warmed), the alternating rounds of the read, write and mix
 * scenarios, and the figures read from them. The machine is shared and noisy, so a ratio is the
 * median of per-round ratios: within a round the contenders run back to back (their order
 * reversed every other round), so they see much the same background load.
 */
import { runBehaviourChecks } from "./checks";
import { ROUNDS, SECONDS } from "./options";
import { cpuSeconds, fail, fmt, median, seedOverHttp } from "./targets";
import { type WrkResult, wrk } from "./wrk";

export const SEED_PER_USER = 1000;
export const SCENARIOS = ["read", "write", "mix"] as const;
export type Scenario = (typeof SCENARIOS)[number];
/**
 * What spreadLoad runs: a round scenario, or update (bench/update.ts, the service sides only;
 * also bench/compare.ts) or delete (bench/compare.ts, over plants it seeds first).
 */
export type LoadScenario = Scenario | "update" | "delete";
export type Figure = "rps" | "p50" | "p99" | "cpuUs";

/** Two users' tokens: wrk's threads alternate between them. */
export type TokenPair = [string, string];

/**
 * Many tokens per user, for a service with its default per-token limit on: each wrk thread turns
 * over its user's tokens (bench/lua/many-tokens.lua), so the load is not answered 429.
 */
export interface LoadTokens {
  a: string[];
  b: string[];
}

/** A scenario's load spread over `tokens` (`swapped`: the first thread takes b's); otherwise as wrk(). */
export function spreadLoad(
  url: string,
  scenario: LoadScenario,
  tokens: LoadTokens,
  idBase: number,
  {
    seconds,
    shape,
    swapped = false,
    env = {},
  }: { seconds?: number; shape?: Parameters<typeof wrk>[4]; swapped?: boolean; env?: Record<string, string> } = {},
): Promise<WrkResult> {
  const [first, second] = swapped ? [tokens.b, tokens.a] : [tokens.a, tokens.b];
  if (first.length === 0 || first.length !== second.length)
    fail("spreadLoad: as many tokens for each user, at least one");
  return wrk(url, "many-tokens", [String(idBase), String(first.length), ...first, ...second], seconds, shape, {
    ...env,
    BENCH_SCENARIO: scenario,
  });
}

/** One side of a comparison: runs a scenario's load once, its new plants' ids starting past `idBase`. */
export interface Contender<Name extends string> {
  name: Name;
  run(scenario: Scenario, idBase: number): Promise<WrkResult>;
  /** The serving process: its CPU time (all threads, /proc) over a run, per request answered, is `cpuUs`. */
  pid?: number;
}

export type Results<Name extends string> = Record<Name, Record<Scenario, WrkResult[]>>;

/**
 * Seeds SEED_PER_USER plants per user through the API (unless `seed` is false: another
 * instance on the same database did), runs the behaviour checks, then warms it up for 1 s, over
 * `warmWith` when given (the load's tokens); answers the warm-up's req/s.
 */
export async function readyForLoad(
  name: string,
  url: string,
  [a, b]: TokenPair,
  seed = true,
  warmWith?: LoadTokens,
): Promise<number> {
  if (seed) {
    await seedOverHttp(url, a, SEED_PER_USER);
    await seedOverHttp(url, b, SEED_PER_USER);
  }
  const failures = await runBehaviourChecks(url, a, b);
  if (failures.length > 0) fail(`${name} fails the behaviour checks:\n  ${failures.join("\n  ")}`);
  console.log(
    `${name}: behaviour checks pass; ${seed ? `${2 * SEED_PER_USER} plants seeded` : "plants seeded through another instance"}`,
  );
  const warm = warmWith
    ? await spreadLoad(url, "read", warmWith, 0, { seconds: 1 })
    : await wrk(url, "read", [a, b, "0"], 1);
  return warm.rps;
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
        const cpuBefore = contender.pid === undefined ? undefined : cpuSeconds(contender.pid);
        const result = await contender.run(scenario, idBase);
        const cpuAfter = contender.pid === undefined ? undefined : cpuSeconds(contender.pid);
        if (cpuBefore !== undefined && cpuAfter !== undefined) {
          result.cpuUs = (1e6 * (cpuAfter - cpuBefore)) / (result.rps * SECONDS);
        }
        results[contender.name][scenario].push(result);
        console.log(
          `round ${round} ${scenario.padEnd(5)} ${contender.name.padEnd(width)} ${fmt(result.rps).padStart(7)} req/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms  CPU ${fmt(result.cpuUs ?? Number.NaN, 1)} µs/request  non-2xx ${result.non2xx}  socket errors ${result.errors}`,
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
  median(results[name][scenario].map((r) => r[key] ?? Number.NaN));

/** The median over rounds of `name` / `baseline` within each round. */
export const pairedRatio = <Name extends string>(
  results: Results<Name>,
  name: Name,
  baseline: Name,
  scenario: Scenario,
  key: Figure,
) =>
  median(
    results[name][scenario].map((r, i) =>
      ratio(r[key] ?? Number.NaN, (results[baseline][scenario][i] as WrkResult)[key] ?? Number.NaN),
    ),
  );

/** Non-2xx answers and socket errors over every round of a scenario. */
export const errorCount = <Name extends string>(results: Results<Name>, name: Name, scenario: Scenario) =>
  results[name][scenario].reduce((sum, r) => sum + r.non2xx + r.errors, 0);

export const mark = (ok: boolean) => (ok ? "met" : "NOT met");
