import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type CrashSummary, runCrashRounds } from "../support/crash-harness";
import { scratchDir } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

let scratch: ReturnType<typeof scratchDir>;
beforeAll(() => {
  scratch = scratchDir();
});
afterAll(() => scratch.cleanup());

test("SIGKILL mid-write, 3 rounds: no acknowledged create lost, no phantom row, data exact, file intact", async () => {
  const log: string[] = [];
  const summary: CrashSummary = await runCrashRounds({
    rounds: 3,
    dir: scratch.dir,
    maxAcknowledged: 150,
    log: (line) => log.push(line),
  });
  // On failure the round lines (with the seed to replay) explain what went wrong.
  const context = log.join("\n");
  expect(summary.rounds, context).toBe(3);
  for (const round of summary.perRound) {
    expect(round.acknowledged, context).toBeGreaterThan(0);
    expect(round.lost, context).toBe(0);
    expect(round.phantom, context).toBe(0);
    expect(round.corrupt, context).toBe(0);
    expect(round.integrity, context).toBe("ok");
    expect(round.refused, context).toBe(0);
    expect(round.unexpected, context).toBe(0);
    expect(round.badEcho, context).toBe(0);
    expect(round.servedMismatch, context).toBe(false);
  }
  expect(summary.lost, context).toBe(0);
  expect(summary.phantom, context).toBe(0);
  expect(summary.corrupt, context).toBe(0);
  expect(summary.integrity, context).toBe("ok");
  expect(summary.finalRestart, context).toBe("ok");
}, 60_000);
