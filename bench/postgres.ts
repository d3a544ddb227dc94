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
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { type Cluster, createDatabase, startCluster } from "../scripts/pg-cluster";
import { coldStarts } from "./cold-start";
import { CONNECTIONS, ROUNDS, SECONDS } from "./options";
import { type ClusterFacts, type PostgresContender, postgresReport } from "./postgres-report";
import { readyForLoad, runRounds, type Scenario, SEED_PER_USER, type TokenPair } from "./rounds";
import { cli, fail, onFail, POSTGRES_TARGETS, peakRssKiB, type Running, startTarget, type Target } from "./targets";
import { type WrkResult, wrk } from "./wrk";

const { service: SERVICE, serviceWarn: SERVICE_WARN, baseline: BASELINE, floor: FLOOR } = POSTGRES_TARGETS;

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

    const baseline = await start(BASELINE, databases.baseline);
    await readyForLoad("baseline", baseline.url, tokens.baseline);
    const baseline2 = await start(BASELINE, databases.baseline);
    await readyForLoad("baseline, process 2", baseline2.url, tokens.baseline, false);
    const first = await start(SERVICE, databases.service);
    await readyForLoad("service, instance 1", first.url, tokens.service);
    const second = await start(SERVICE, databases.service);
    await readyForLoad("service, instance 2", second.url, tokens.service, false);
    const quiet = await start(SERVICE_WARN, databases.service);
    await readyForLoad("service, LOG_LEVEL=warn", quiet.url, tokens.service, false);
    const floor = await start(FLOOR, databases.floor);
    await readyForLoad("floor", floor.url, tokens.floor);

    const half = Math.ceil(CONNECTIONS / 2);
    /** Two processes, one wrk each; one user per wrk, the second's ids half-way to the next run's base. */
    const split =
      (one: Running, two: Running, [a, b]: TokenPair) =>
      async (scenario: Scenario, idBase: number): Promise<WrkResult> => {
        const [x, y] = await Promise.all([
          wrk(one.url, scenario, [a, b, `${idBase}`], SECONDS, { threads: 1, connections: half }),
          wrk(two.url, scenario, [b, a, `${idBase + 500_000_000}`], SECONDS, {
            threads: 1,
            connections: CONNECTIONS - half,
          }),
        ]);
        return together(x, y);
      };
    const results = await runRounds<PostgresContender>([
      { name: "baseline", run: (scenario, idBase) => wrk(baseline.url, scenario, [...tokens.baseline, `${idBase}`]) },
      { name: "1 instance", run: (scenario, idBase) => wrk(first.url, scenario, [...tokens.service, `${idBase}`]) },
      { name: "floor", run: (scenario, idBase) => wrk(floor.url, scenario, [...tokens.floor, `${idBase}`]) },
      {
        name: "1 instance, warn",
        run: (scenario, idBase) => wrk(quiet.url, scenario, [...tokens.service, `${idBase}`]),
      },
      { name: "2 baselines", run: split(baseline, baseline2, tokens.baseline) },
      { name: "2 instances", run: split(first, second, tokens.service) },
    ]);

    const facts = await clusterFacts(cluster.url);
    const rss = {
      baseline: await peakRssKiB(baseline.pid),
      first: await peakRssKiB(first.pid),
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
    postgresReport(results, facts, rss, cold);
  } finally {
    for (const server of running) await server.stop();
    await cluster.stop();
    guard.release();
    rmSync(logs, { recursive: true, force: true });
  }
}
