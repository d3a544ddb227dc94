/**
 * Long crash-safety run: `bun scripts/crash-test.ts [rounds]` (default 30). Each round SIGKILLs
 * the real server mid-write and checks the database file; exits 1 on any loss, phantom row,
 * corrupt row or failed integrity check. CRASH_SEED=<n> replays a run's random choices.
 */
import { crashRunProblems, runCrashRounds } from "../tests/support/crash-harness";
import { scratchDir } from "../tests/support/process";

const arg = process.argv[2];
const rounds = arg === undefined ? 30 : Number(arg);
if (!Number.isInteger(rounds) || rounds < 1) {
  console.error("usage: bun scripts/crash-test.ts [rounds]   (rounds: a positive integer, default 30)");
  process.exit(2);
}
const seedText = process.env.CRASH_SEED;
const seed = seedText ? Number(seedText) : undefined;

const scratch = scratchDir();
let exitCode = 1;
try {
  const summary = await runCrashRounds({ rounds, dir: scratch.dir, seed, log: (line) => console.log(line) });
  console.log(
    `crash-test: ${summary.rounds} rounds, ${summary.acknowledged} writes acknowledged, ` +
      `${summary.inDoubt} in doubt at the kill (${summary.inDoubtStored} stored), ` +
      `lost ${summary.lost}, phantom ${summary.phantom}, corrupt ${summary.corrupt}, integrity ${summary.integrity}`,
  );
  const problems = crashRunProblems(summary);
  for (const problem of problems) console.error(`crash-test: FAILED: ${problem}`);
  if (problems.length > 0) console.error(`crash-test: replay with CRASH_SEED=${summary.seed}`);
  exitCode = problems.length === 0 ? 0 : 1;
} catch (error) {
  console.error(`crash-test: FAILED: ${(error as Error).message}`);
} finally {
  scratch.cleanup();
}
process.exit(exitCode);
