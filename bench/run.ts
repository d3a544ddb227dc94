/**
 * `bun run bench`: the service against bench/baseline/ on the same machine and load, in
 * alternating rounds, every figure a ratio. Seven contenders: the service with default settings
 * (the access log on), with LOG_LEVEL=warn and with the rate limit on, the like-for-like baseline (the same logging and
 * metrics work, table A: what the framework and the ORM cost), the project's floor (no access
 * log, metrics or request ids, table B: what the service costs in all), the bare floor and the usual pick,
 * Fastify + better-sqlite3 on Node (table D, bench/usual-pick.ts), and table E (bench/two-floors-report.ts): the
 * bare floor on a plain schema against the project's floor, the service and Fastify, with server CPU
 * per request. The service runs with the per-token rate limit off, and on beside it (service-limit),
 * so every side's load turns over as many tokens per user (bench/load-tokens.ts), issued on its own database.
 *
 * Then the service sides alone: the update scenario (PATCH with If-Match) against the create
 * scenario, in alternating rounds of their own (bench/update.ts). Then, the service alone: the read and page scenarios on a 1,000,000-plant store against the
 * read scenario on a 2,000-plant one (bench/large-store.ts), and the big-list scenario
 * (bench/big-list.ts: one owner's 1,000,000 plants read whole while /healthz is polled), and the
 * webhook-budget scenario (bench/webhook-budget.ts: the API with 10 endpoints refusing connections
 * against none), and the change-streams scenario (bench/change-streams.ts: 1,000 idle SSE streams'
 * CPU and memory, and a change's fan-out to them all).
 * Options: bench/options.ts. With `--engine postgres` (or BENCH_ENGINE=postgres), the same
 * scenarios on PostgreSQL instead (bench/postgres.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { baselineReport, tagIndexNote } from "./baseline-report";
import { bigListScenario, printBigList } from "./big-list";
import { changeStreamsScenario, printChangeStreams } from "./change-streams";
import { coldStarts } from "./cold-start";
import { floorReport, floorTargets } from "./floor-report";
import { largeStoreCheck, largeStoreVerdicts, printLargeStore } from "./large-store";
import { bareFloorTokens, issueLoadTokens, tokensPerUser } from "./load-tokens";
import { BIG_LIST, CHANGE_STREAMS, CONNECTIONS, ENGINE, LARGE, ROUNDS, SECONDS, WEBHOOK_BUDGET } from "./options";
import { type LoadTokens, readyForLoad, runRounds, SEED_PER_USER, spreadLoad, type TokenPair } from "./rounds";
import {
  cli,
  DEFAULT_RATE_LIMIT,
  fail,
  peakRssKiB,
  type Running,
  startScript,
  startTarget,
  TARGETS,
  type TargetName,
  target,
} from "./targets";
import { twoFloorsReport } from "./two-floors-report";
import { printUpdateVsCreate, updateVsCreate } from "./update";
import { ensureFastifyInstalled, printUsualPick } from "./usual-pick";
import { printWebhookBudget, webhookBudgetScenario } from "./webhook-budget";

/** The update scenario runs on these only: the baseline and the floor have no PATCH. */
const SERVICE_SIDES = ["service", "service-warn"] as const;

async function main() {
  if (Bun.spawnSync(["which", "wrk"]).exitCode !== 0) fail("wrk is not installed (apt-get install -y wrk)");
  if (BIG_LIST && Bun.spawnSync(["which", "curl"]).exitCode !== 0) fail("curl is not installed (or BENCH_BIG_LIST=0)");
  process.once("SIGINT", () => fail("interrupted"));
  ensureFastifyInstalled();
  const dir = mkdtempSync(join(tmpdir(), "plant-store-bench-"));
  try {
    const paths = Object.fromEntries(TARGETS.map(({ name }) => [name, join(dir, `${name}.sqlite`)])) as Record<
      TargetName,
      string
    >;
    const tokens = {} as Record<TargetName, TokenPair>;
    for (const { name } of TARGETS) {
      if (name === "bare") continue;
      tokens[name] = [
        await cli(["token", "create", "--user", "bench-a"], paths[name]),
        await cli(["token", "create", "--user", "bench-b"], paths[name]),
      ];
    }
    // The baseline (no limit, faster than the service) warms up first over its two tokens: its
    // req/s sizes the load's tokens, as many per user on every side, each side's process its own limiter.
    const running = {} as Record<TargetName, Running>;
    running.baseline = await startTarget(target("baseline"), paths.baseline);
    const warmRps = await readyForLoad("baseline", running.baseline.url, tokens.baseline);
    // Only service-limit is limited; every side's load turns over as many tokens all the same.
    const perUser = tokensPerUser(warmRps, { limitedLoad: 1, contenders: TARGETS.length });
    const load = {} as Record<TargetName, LoadTokens>;
    for (const { name } of TARGETS) {
      if (name !== "bare") load[name] = await issueLoadTokens(paths[name], perUser);
    }
    ({ pair: tokens.bare, load: load.bare } = bareFloorTokens(paths.bare, perUser));
    console.log(`load tokens: ${perUser} per user on every side (warm-up ${Math.round(warmRps)} req/s)`);
    for (const { name } of TARGETS) {
      if (name === "baseline") continue;
      running[name] = await startTarget(target(name), paths[name]);
      await readyForLoad(name, running[name].url, tokens[name], true, load[name]);
    }

    const results = await runRounds(
      TARGETS.map(({ name }) => ({
        name,
        pid: running[name].pid,
        run: (scenario, idBase) => spreadLoad(running[name].url, scenario, load[name], idBase),
      })),
    );
    const rss = {} as Record<TargetName, number>;
    for (const { name } of TARGETS) rss[name] = await peakRssKiB(running[name].pid);
    const updates = await updateVsCreate(
      SERVICE_SIDES.map((name) => ({ name, url: running[name].url, load: load[name] })),
      dir,
    );
    for (const { name } of TARGETS) await running[name].stop();

    const sides = <Name extends TargetName>(names: Name[], viaBunRun: boolean) =>
      names.map((name) => ({ name, target: target(name), database: paths[name], token: tokens[name][0], viaBunRun }));
    const direct = await coldStarts(sides(["service", "baseline"], false));
    const viaBunRun = await coldStarts(sides(["service", "service-warn", "floor"], true));

    console.log(
      `\nPlant Store vs bench/baseline/ — ${ROUNDS} alternating rounds, ${SECONDS} s each, wrk -t2 -c${CONNECTIONS}, ${2 * SEED_PER_USER} plants seeded; figures are medians, ratios the median of per-round ratios`,
    );
    console.log(
      `\nA. Like for like — service: \`${startScript().text}\` (\`bun run start\`) with its defaults: synchronous=FULL with group commit, access log on, the per-token rate limit off (service-limit: on, RATE_LIMIT_PER_MINUTE=${DEFAULT_RATE_LIMIT}, the default); baseline: plain Bun.serve + bun:sqlite, synchronous=NORMAL, the same request-id, access-log and metrics work, no rate limit; every side's load turns over ${perUser} tokens per user\n`,
    );
    const tableA = baselineReport(results, rss, direct);
    console.log(`\n${tagIndexNote(paths)}`);
    console.log(
      "\nB. Against the bare floor — floor: the baseline with no access log, metrics or request ids (BASELINE_BARE=1), synchronous=NORMAL; service: as in A; service-warn: the same with LOG_LEVEL=warn (no request lines); cold start through `bun run start` and `bun run bench:floor`\n",
    );
    const tableB = floorReport(
      { results, floor: "floor", sides: ["service", "service-warn"], rss, coldStart: viaBunRun },
      floorTargets("service", "service-warn"),
    );
    const tableC = printUpdateVsCreate(updates);
    printUsualPick(results, rss);
    console.log(
      "\nE. Two floors, the service and the usual pick — every ratio to the bare floor (a plain plants/tokens schema: bench/baseline/ with BASELINE_SCHEMA=bare and BASELINE_BARE=1, synchronous=NORMAL); the project floor is the same on the service's migrations; the service with its defaults and the rate limit off, and with it on beside\n",
    );
    const tableE = twoFloorsReport(results, rss);
    const verdicts = [...tableA.verdicts, ...tableB.verdicts, ...tableC.verdicts, ...tableE.verdicts];
    let allMet = tableA.allMet && tableB.allMet && tableC.allMet && tableE.allMet;

    if (LARGE) {
      const large = await largeStoreCheck(dir);
      printLargeStore(large);
      for (const verdict of largeStoreVerdicts(large)) {
        allMet &&= verdict.met;
        verdicts.push(verdict.line);
      }
    }
    if (BIG_LIST) printBigList(await bigListScenario(dir));
    if (WEBHOOK_BUDGET) {
      const budget = printWebhookBudget(await webhookBudgetScenario(dir));
      allMet &&= budget.met;
      verdicts.push(budget.line);
    }
    if (CHANGE_STREAMS) {
      const streams = printChangeStreams(await changeStreamsScenario("sqlite", join(dir, "streams.sqlite")));
      allMet &&= streams.met;
      verdicts.push(...streams.lines);
    }
    console.log(`\nTargets:\n  ${verdicts.join("\n  ")}`);
    console.log(allMet ? "\nAll targets met." : "\nSome targets are not met (see above).");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (ENGINE === "postgres") {
  const { postgresBench } = await import("./postgres");
  await postgresBench();
} else {
  await main();
}
