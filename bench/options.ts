/**
 * The bench's options, read from the environment once; docs/performance.md lists
 * them in a table (keep the two together).
 */
const env = process.env;

const ENGINES = ["sqlite", "postgres"] as const;

/** `--engine <name>` on the command line, else BENCH_ENGINE, else sqlite. */
function engine(): (typeof ENGINES)[number] {
  const at = process.argv.indexOf("--engine");
  const given = at >= 0 ? (process.argv[at + 1] ?? "") : env.BENCH_ENGINE?.trim() || "sqlite";
  const name = given.trim();
  const known = ENGINES.find((candidate) => candidate === name);
  if (known === undefined) {
    console.error(`bench: the engine must be ${ENGINES.join(" or ")}, not "${name}" (--engine or BENCH_ENGINE)`);
    process.exit(2);
  }
  return known;
}

/** Which store the service and the baseline run on: sqlite (a file each) or postgres (bench/postgres.ts). */
export const ENGINE = engine();

/** Alternating rounds of every wrk scenario. */
export const ROUNDS = Number(env.BENCH_ROUNDS ?? 3);
/** Seconds of each wrk run. */
export const SECONDS = Number(env.BENCH_SECONDS ?? 5);
/** wrk's open connections (over 2 threads; on PostgreSQL, split over two wrk processes for two instances). */
export const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 64);
/** BENCH_LARGE=0 skips the 1,000,000-plant store (SQLite only): its read check and the page scenario. */
export const LARGE = env.BENCH_LARGE !== "0";
/** BENCH_BIG_LIST=0 skips the big-list scenario (bench/big-list.ts; SQLite only). */
export const BIG_LIST = env.BENCH_BIG_LIST !== "0";
/** BENCH_WEBHOOK_BUDGET=0 skips the webhook-budget scenario (bench/webhook-budget.ts; SQLite only). */
export const WEBHOOK_BUDGET = env.BENCH_WEBHOOK_BUDGET !== "0";
/** BENCH_CHANGE_STREAMS=0 skips the change-streams scenario (bench/change-streams.ts; both engines). */
export const CHANGE_STREAMS = env.BENCH_CHANGE_STREAMS !== "0";
/** The big-list owner's plants (also read by `bun bench/big-list.ts`). */
export const BIG_LIST_PLANTS = Number(env.BENCH_BIG_LIST_PLANTS ?? 1_000_000);
/** BENCH_TOKENS: load tokens per user on every side (bench/load-tokens.ts), the default rate limit being on; unset: sized from a warm-up. */
export const TOKENS = env.BENCH_TOKENS === undefined ? undefined : Number(env.BENCH_TOKENS);
