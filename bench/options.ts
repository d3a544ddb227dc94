/**
 * The bench's options, read from the environment once; the README's Performance section lists
 * them in a table (keep the two together).
 */
const env = process.env;

/** Alternating rounds of every wrk scenario. */
export const ROUNDS = Number(env.BENCH_ROUNDS ?? 5);
/** Seconds of each wrk run. */
export const SECONDS = Number(env.BENCH_SECONDS ?? 4);
/** wrk's open connections (over 2 threads). */
export const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 32);
/** BENCH_LARGE=0 skips the 1,000,000-plant store: its read check and the page scenario. */
export const LARGE = env.BENCH_LARGE !== "0";
/** BENCH_BIG_LIST=0 skips the big-list scenario (bench/big-list.ts). */
export const BIG_LIST = env.BENCH_BIG_LIST !== "0";
/** The big-list owner's plants (also read by `bun bench/big-list.ts`). */
export const BIG_LIST_PLANTS = Number(env.BENCH_BIG_LIST_PLANTS ?? 1_000_000);
