/**
 * `bun run bench --engine postgres`: the read, write and mix scenarios on PostgreSQL, the
 * service against the no-framework baseline (bench/baseline/postgres-server.ts) measured in
 * the same alternating rounds, with one service instance and with two on the same database.
 *
 * One throwaway cluster (scripts/pg-cluster.ts) with fsync and synchronous_commit on, so a
 * commit waits for the disk as in production; each side gets its own database on it. Two
 * instances are two service processes loaded by two wrk processes, one thread and half the
 * connections each (the same two client threads and users as one wrk with -t2): their req/s
 * are summed and the worse p50 and p99 taken. Two baseline processes are loaded the same way, so
 * two instances are also compared like for like: on a 2-core machine a second process competes
 * with the first and with PostgreSQL for the same cores, whatever it runs. One instance is also
 * compared with the bare floor (the baseline without its access log, metrics and request ids),
 * cold start included: `bun run start` against `bun run bench:floor:postgres`, and so is a third
 * instance on the same database with LOG_LEVEL=warn (no request lines), as on SQLite.
 *
 * Every service instance runs with the default per-token rate limit (RATE_LIMIT_PER_MINUTE unset
 * means 6000 a minute, bursts of a minute's worth), except one more instance on the same
 * database with the limit off, measured in the same rounds: the limit's cost is their ratio.
 * wrk asks far more than a token's budget, so every side's load turns over many tokens per user
 * (bench/lua/many-tokens.lua), as many on every side, sized from the limit-off instance's warm-up
 * (BENCH_TOKENS overrides): the limited instances never answer 429 and the sides stay like for like.
 *
 * Then, on a database of its own on the same cluster, the change-streams scenario
 * (bench/change-streams.ts; BENCH_CHANGE_STREAMS=0 skips it), with its own targets.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { type Cluster, createDatabase, startCluster } from "../scripts/pg-cluster";
import { changeStreamsScenario, printChangeStreams } from "./change-streams";
import { coldStarts } from "./cold-start";
import { issueLoadTokens, tokensPerUser } from "./load-tokens";
import { CHANGE_STREAMS, CONNECTIONS, ROUNDS, SECONDS } from "./options";
import { type ClusterFacts, POSTGRES_CONTENDERS, type PostgresContender, postgresReport } from "./postgres-report";
import {
  figure,
  type LoadTokens,
  readyForLoad,
  runRounds,
  SCENARIOS,
  type Scenario,
  SEED_PER_USER,
  spreadLoad,
  type TokenPair,
} from "./rounds";
import {
  cli,
  fail,
  fmt,
  onFail,
  POSTGRES_TARGETS,
  peakRssKiB,
  type Running,
  startTarget,
  type Target,
} from "./targets";
import type { WrkResult } from "./wrk";

const {
  service: SERVICE,
  serviceWarn: SERVICE_WARN,
  serviceLimitOff: SERVICE_LIMIT_OFF,
  baseline: BASELINE,
  floor: FLOOR,
} = POSTGRES_TARGETS;

/** The contenders that spend the tokens' budgets: "1 instance", "1 instance, warn" and "2 instances" (two processes, so weighed more). */
const LIMITED_LOAD = 3.5;
/** Two wrk runs at once, as one: req/s summed, the worse latency, every error counted. */
function together(one: WrkResult, two: WrkResult): WrkResult {
  const rps = one.rps + two.rps;
  return {
    rps,
    p50: Math.max(one.p50, two.p50),
    p99: Math.max(one.p99, two.p99),
    non2xx: one.non2xx + two.non2xx,
    errors: one.errors + two.errors,
    bytesPerResponse: (one.bytesPerResponse * one.rps + two.bytesPerResponse * two.rps) / rps,
    counts: {},
  };
}

async function clusterFacts(url: string): Promise<ClusterFacts> {
  const sql = new SQL(url, { max: 1 });
  try {
    const [row] = await sql`SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync,
      current_setting('synchronous_commit') AS synchronous_commit`;
    const open = (await sql`SELECT datname, count(*)::int AS n FROM pg_stat_activity
      WHERE datname LIKE 'bench_%' GROUP BY datname`) as Array<{ datname: string; n: number }>;
    return {
      version: row.version,
      fsync: row.fsync,
      synchronousCommit: row.synchronous_commit,
      connections: Object.fromEntries(open.map(({ datname, n }) => [datname, n])),
    };
  } finally {
    await sql.close();
  }
}

async function tokensFor(database: string): Promise<TokenPair> {
  return [
    await cli(["token", "create", "--user", "bench-a"], database),
    await cli(["token", "create", "--user", "bench-b"], database),
  ];
}

export async function postgresBench(): Promise<void> {
  if (Bun.spawnSync(["which", "wrk"]).exitCode !== 0) fail("wrk is not installed (apt-get install -y wrk)");
  if (CONNECTIONS < 2) fail("BENCH_CONNECTIONS must be at least 2 on PostgreSQL: two instances get half each");
  let cluster: Cluster;
  try {
    cluster = await startCluster({ durable: true });
  } catch (error) {
    fail(`cannot start a PostgreSQL cluster: ${(error as Error).message}`);
  }
  const logs = mkdtempSync(join(tmpdir(), "plant-store-bench-pg-"));
  const guard = onFail(() => {
    cluster.stopNow();
    rmSync(logs, { recursive: true, force: true });
  });
  process.once("SIGINT", () => fail("interrupted"));
  const running: Running[] = [];
  try {
    const databases = {
      service: await createDatabase(cluster.url, "bench_service"),
      baseline: await createDatabase(cluster.url, "bench_baseline"),
      floor: await createDatabase(cluster.url, "bench_floor"),
    };
    // The baseline does not migrate: the service's CLI gives its databases the same schema.
    await cli(["migrate"], databases.baseline);
    await cli(["migrate"], databases.floor);
    const tokens = {
      service: await tokensFor(databases.service),
      baseline: await tokensFor(databases.baseline),
      floor: await tokensFor(databases.floor),
    };
    const start = async (target: Target, database: string) => {
      const server = await startTarget(target, database, join(logs, target.name));
      running.push(server);
      return server;
    };

    // The limit-off instance seeds the service's database, and its warm-up sizes the load's tokens.
    const limitOff = await start(SERVICE_LIMIT_OFF, databases.service);
    const warmRps = await readyForLoad("service, limit off", limitOff.url, tokens.service);
    const perUser = tokensPerUser(warmRps, { limitedLoad: LIMITED_LOAD, contenders: POSTGRES_CONTENDERS.length });
    const load = {
      service: await issueLoadTokens(databases.service, perUser),
      baseline: await issueLoadTokens(databases.baseline, perUser),
      floor: await issueLoadTokens(databases.floor, perUser),
    };
    console.log(`load tokens: ${perUser} per user on every side (warm-up ${Math.round(warmRps)} req/s)`);

    const baseline = await start(BASELINE, databases.baseline);
    await readyForLoad("baseline", baseline.url, tokens.baseline, true, load.baseline);
    const baseline2 = await start(BASELINE, databases.baseline);
    await readyForLoad("baseline, process 2", baseline2.url, tokens.baseline, false, load.baseline);
    const first = await start(SERVICE, databases.service);
    await readyForLoad("service, instance 1", first.url, tokens.service, false, load.service);
    const second = await start(SERVICE, databases.service);
    await readyForLoad("service, instance 2", second.url, tokens.service, false, load.service);
    const quiet = await start(SERVICE_WARN, databases.service);
    await readyForLoad("service, LOG_LEVEL=warn", quiet.url, tokens.service, false, load.service);
    const floor = await start(FLOOR, databases.floor);
    await readyForLoad("floor", floor.url, tokens.floor, true, load.floor);

    const half = Math.ceil(CONNECTIONS / 2);
    const one = (server: Running, tokens: LoadTokens) => (scenario: Scenario, idBase: number) =>
      spreadLoad(server.url, scenario, tokens, idBase);
    /** Two processes, one wrk each; one user per wrk, the second's ids half-way to the next run's base. */
    const split =
      (first: Running, second: Running, tokens: LoadTokens) =>
      async (scenario: Scenario, idBase: number): Promise<WrkResult> => {
        const [x, y] = await Promise.all([
          spreadLoad(first.url, scenario, tokens, idBase, { shape: { threads: 1, connections: half } }),
          spreadLoad(second.url, scenario, tokens, idBase + 500_000_000, {
            shape: { threads: 1, connections: CONNECTIONS - half },
            swapped: true,
          }),
        ]);
        return together(x, y);
      };
    const runs: Record<PostgresContender, (scenario: Scenario, idBase: number) => Promise<WrkResult>> = {
      baseline: one(baseline, load.baseline),
      "1 instance": one(first, load.service),
      "1 instance, limit off": one(limitOff, load.service),
      floor: one(floor, load.floor),
      "1 instance, warn": one(quiet, load.service),
      "2 baselines": split(baseline, baseline2, load.baseline),
      "2 instances": split(first, second, load.service),
    };
    // One process each: their CPU per request is read from /proc (the two-instance sides have two).
    const pids: Partial<Record<PostgresContender, number>> = {
      baseline: baseline.pid,
      "1 instance": first.pid,
      "1 instance, limit off": limitOff.pid,
      floor: floor.pid,
      "1 instance, warn": quiet.pid,
    };
    const results = await runRounds<PostgresContender>(
      POSTGRES_CONTENDERS.map((name) => ({ name, run: runs[name], pid: pids[name] })),
    );
    const cpu = (name: PostgresContender) =>
      SCENARIOS.map((scenario) => fmt(figure(results, name, scenario, "cpuUs"), 1)).join(" / ");
    console.log(
      `\nServer CPU µs per request, read / write / mix (median of rounds; the PostgreSQL cluster's own CPU not counted): ${Object.keys(
        pids,
      )
        .map((name) => `${name} ${cpu(name as PostgresContender)}`)
        .join("; ")}`,
    );

    const facts = await clusterFacts(cluster.url);
    const rss = {
      baseline: await peakRssKiB(baseline.pid),
      first: await peakRssKiB(first.pid),
      limitOff: await peakRssKiB(limitOff.pid),
      second: await peakRssKiB(second.pid),
      quiet: await peakRssKiB(quiet.pid),
      floor: await peakRssKiB(floor.pid),
    };
    for (const server of running.splice(0)) await server.stop();
    const logPrefix = join(logs, "cold");
    const cold = await coldStarts([
      {
        name: "1 instance",
        target: SERVICE,
        database: databases.service,
        token: tokens.service[0],
        logPrefix,
        viaBunRun: true,
      },
      {
        name: "1 instance, warn",
        target: SERVICE_WARN,
        database: databases.service,
        token: tokens.service[0],
        logPrefix,
        viaBunRun: true,
      },
      { name: "floor", target: FLOOR, database: databases.floor, token: tokens.floor[0], logPrefix, viaBunRun: true },
    ]);

    console.log(
      `\nPlant Store on PostgreSQL vs baseline — ${ROUNDS} alternating rounds, ${SECONDS} s each, wrk -t2 -c${CONNECTIONS} (2 instances: two wrk -t1, -c${half} and -c${CONNECTIONS - half}, one per instance, req/s summed, the worse p50 and p99), ${2 * SEED_PER_USER} plants seeded; figures are medians, ratios the median of per-round ratios`,
    );
    postgresReport(results, facts, rss, cold, perUser);
    if (CHANGE_STREAMS) {
      const database = await createDatabase(cluster.url, "bench_streams");
      const streams = printChangeStreams(await changeStreamsScenario("postgres", database, join(logs, "streams")));
      console.log(`\nChange-stream targets:\n  ${streams.lines.join("\n  ")}`);
      console.log(
        streams.met ? "\nAll change-stream targets met." : "\nSome change-stream targets are not met (see above).",
      );
    }
  } finally {
    for (const server of running) await server.stop();
    await cluster.stop();
    guard.release();
    rmSync(logs, { recursive: true, force: true });
  }
}
