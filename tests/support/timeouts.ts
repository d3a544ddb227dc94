/**
 * The per-test timeout of files whose tests wait on real processes, disks or a database
 * (tests/process, tests/engines): `setDefaultTimeout(SLOW_TEST_TIMEOUT_MS)` at the top of each.
 * Bun's 5 s default is for in-process tests; a server start, a CLI run or a PostgreSQL database
 * copy can pass it on a busy two-core machine without anything being wrong. It has to be said in
 * every file: bun test (1.4.5) resets it per file, so the preload's call reaches the first file
 * only, and bunfig.toml has no such setting. `bun run test` also passes --timeout.
 */
export const SLOW_TEST_TIMEOUT_MS = 30_000;

/**
 * For files whose tests start a dozen or more CLI processes at once (each loads the whole CLI):
 * on two cores that is CPU-bound, and several times slower when another job shares the machine.
 */
export const CLI_FAN_OUT_TIMEOUT_MS = 90_000;
