/**
 * Another user's reads beside a large webhook backlog (issue 41, SQLite, or PostgreSQL with `--engine postgres`):
 *
 *   A. with 2,000,000 pending deliveries not yet due (one endpoint of user A, down for hours),
 *      user B's reads (`GET /plants?limit=20`, wrk -t2 -c64) keep a p50 within 2× of the same
 *      service on the same file without those deliveries;
 *   B. while four clients stream A's whole delivery log (`GET /webhooks/{id}/deliveries`, no
 *      limit, 2,000,000 entries each, curl reading each body to the end, 4 at once, again and
 *      again while wrk runs), B's reads keep a p50 and a p99 under 100 ms.
 *
 *   bun bench/webhook-backlog.ts [A] [B] [--cpu-prof] [--engine postgres]
 *
 * The database is built once and kept in the temp folder (rebuilt when older than 12 h, since its
 * deliveries are due a day after it was built, or when the migrations change); each run works on
 * copies. The services run with their defaults but RATE_LIMIT_PER_MINUTE=0 (B's load is two
 * tokens'); `--cpu-prof` starts the backlog service under `bun --cpu-prof` and prints where its
 * main thread spent its time (bench/cpu-profile-top.ts).
 * On PostgreSQL (`--engine postgres`, or BENCH_ENGINE), nothing is cached: a throwaway cluster with fsync
 * and synchronous_commit on (scripts/pg-cluster.ts, as bench/postgres.ts) gets the empty database
 * (users and tokens by the CLI, B's plants, A's endpoint), the backlog database copied from it as a
 * template, and the deliveries in one INSERT … SELECT FROM generate_series, then ANALYZE; the service
 * runs on each with its defaults but RATE_LIMIT_PER_MINUTE=0.
 * BENCH_BACKLOG_DELIVERIES changes the backlog's size; BENCH_BACKLOG_DUE=spread makes each delivery
 * due a day after its own creation (all distinct) instead of all at the same time, a day after the
 * build; BENCH_ROUNDS, BENCH_SECONDS as elsewhere.
 */
import { Database } from "bun:sqlite";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { type Cluster, createDatabase, startCluster } from "../scripts/pg-cluster";
import { EMBEDDED_MIGRATIONS } from "../src/db/sqlite/migrations";
import { newSecret } from "../src/webhooks/signing";
import { printProfile } from "./cpu-profile-top";
import { CONNECTIONS, ENGINE, ROUNDS, SECONDS } from "./options";
import {
  cli,
  fail,
  fmt,
  median,
  onFail,
  POSTGRES_TARGETS,
  ROOT,
  type Running,
  SERVICE_LIMIT_OFF,
  startTarget,
  type Target,
} from "./targets";
import { type WrkResult, wrk } from "./wrk";

const DELIVERIES = Number(process.env.BENCH_BACKLOG_DELIVERIES ?? 2_000_000);
/** Each delivery due a day after its creation; otherwise all of them at one time, a day after the build. */
const SPREAD = process.env.BENCH_BACKLOG_DUE === "spread";
const B_PLANTS = 2_000;
const STREAMS = 4;
/** Rows per transaction while building. */
const BATCH = 100_000;
/** The endpoint's URL: never tried in the run (nothing is due), and it would not resolve if it were. */
const DOWN_URL = "https://receiver.invalid/hooks";
/** A: the backlog's p50 at most this many times the empty outbox's. B: p50 and p99 under this. */
const P50_BAR = 2;
const STREAM_BAR_MS = 100;
const FRESH_MS = 12 * 3600_000;
const DAY_MS = 24 * 3600_000;
const CACHE_VERSION = 1;

const args = process.argv.slice(2);
const profile = args.includes("--cpu-prof");
const wanted = args.filter((arg) => arg === "A" || arg === "B");
const runA = wanted.length === 0 || wanted.includes("A");
const runB = wanted.length === 0 || wanted.includes("B");

interface Built {
  version: number;
  key: string;
  builtAt: number;
  deliveries: number;
  tokenA: string;
  tokensB: [string, string];
  webhookId: number;
}

const load = async () => (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
const migrationsKey = () => String(Bun.hash(EMBEDDED_MIGRATIONS.map((m) => m.hash).join(",")));

/** The cached files: `empty.sqlite` (users, B's plants, A's endpoint) and `backlog.sqlite` (the same and the deliveries). */
async function built(): Promise<{ dir: string; meta: Built }> {
  const dir = join(tmpdir(), `plant-store-webhook-backlog-${DELIVERIES}${SPREAD ? "-spread" : ""}`);
  const metaFile = Bun.file(join(dir, "meta.json"));
  if (await metaFile.exists()) {
    const meta = (await metaFile.json()) as Built;
    const fresh = Date.now() - meta.builtAt < FRESH_MS;
    if (meta.version === CACHE_VERSION && meta.key === migrationsKey() && fresh) {
      console.log(`Using the database built ${new Date(meta.builtAt).toISOString()} in ${dir}`);
      return { dir, meta };
    }
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const started = performance.now();
  const empty = join(dir, "empty.sqlite");
  // The CLI creates the file with its schema, each user and token, as bench/targets.ts's cli does.
  const tokenA = await cli(["token", "create", "--user", "backlog-a"], empty);
  const tokensB: [string, string] = [
    await cli(["token", "create", "--user", "backlog-b"], empty),
    await cli(["token", "create", "--user", "backlog-b"], empty),
  ];
  const builtAt = Date.now();
  const db = new Database(empty);
  const userId = (name: string) => (db.query("SELECT id FROM users WHERE name = ?").get(name) as { id: number }).id;
  const [a, b] = [userId("backlog-a"), userId("backlog-b")];
  const plant = db.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, ?)");
  db.transaction(() => {
    for (let id = 1; id <= B_PLANTS; id++) plant.run(b, id, `Plant ${id}`, id % 2 === 0 ? "seed" : null);
  })();
  const { id: webhookId } = db
    .query(
      `INSERT INTO webhooks (owner_id, url, secret, created_at, change_cursor)
       VALUES (?1, ?2, ?3, ?4, (SELECT coalesce(max(seq), 0) FROM plant_changes WHERE owner_id = ?1)) RETURNING id`,
    )
    .get(a, DOWN_URL, newSecret(), builtAt - 6 * 3600_000) as { id: number };
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  const backlog = join(dir, "backlog.sqlite");
  copyFileSync(empty, backlog);

  // Created over the last 3 hours, due a day after the build (or each a day after its creation);
  // ids `msg_`, the time and a counter, in hex.
  const full = new Database(backlog);
  full.run("PRAGMA synchronous = OFF");
  const insert = full.prepare(
    `WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
     INSERT INTO webhook_deliveries (id, webhook_id, type, payload, status, attempts, created_at, next_attempt_at)
     SELECT printf('msg_%012x%020x', ?4 + i * ?5 / ?6, i), ?3, 'plant.created',
       '{"id":' || i || ',"name":"x"}', 'pending', 0, ?4 + i * ?5 / ?6, coalesce(?7, ?4 + i * ?5 / ?6 + ?8)
     FROM n`,
  );
  const span = 3 * 3600_000;
  for (let first = 1; first <= DELIVERIES; first += BATCH) {
    const last = Math.min(DELIVERIES, first + BATCH - 1);
    full.transaction(() =>
      insert.run(first, last, webhookId, builtAt - span, span, DELIVERIES, SPREAD ? null : builtAt + DAY_MS, DAY_MS),
    )();
  }
  const count = (full.query("SELECT count(*) AS n FROM webhook_deliveries").get() as { n: number }).n;
  if (count !== DELIVERIES) fail(`webhook backlog: built ${count} deliveries, not ${DELIVERIES}`);
  full.run("PRAGMA wal_checkpoint(TRUNCATE)");
  full.close();
  const meta: Built = {
    version: CACHE_VERSION,
    key: migrationsKey(),
    builtAt,
    deliveries: DELIVERIES,
    tokenA,
    tokensB,
    webhookId,
  };
  await Bun.write(metaFile, JSON.stringify(meta));
  console.log(
    `Built ${fmt(DELIVERIES)} deliveries and ${fmt(B_PLANTS)} plants in ${((performance.now() - started) / 1000).toFixed(1)} s (${dir})`,
  );
  return { dir, meta };
}

/**
 * On the cluster, the databases `backlog_empty` (users, tokens, B's plants, A's endpoint) and
 * `backlog_full` (its copy, and the deliveries); answers their URLs and what the run needs.
 */
async function builtPostgres(cluster: Cluster): Promise<{ empty: string; backlog: string; meta: Built }> {
  const started = performance.now();
  const empty = await createDatabase(cluster.url, "backlog_empty");
  // The CLI migrates the database and creates each user and token, as on SQLite.
  const tokenA = await cli(["token", "create", "--user", "backlog-a"], empty);
  const tokensB: [string, string] = [
    await cli(["token", "create", "--user", "backlog-b"], empty),
    await cli(["token", "create", "--user", "backlog-b"], empty),
  ];
  const builtAt = Date.now();
  let webhookId: number;
  const sql = new SQL(empty, { max: 1 });
  try {
    const userId = async (name: string) =>
      ((await sql`SELECT id FROM users WHERE name = ${name}`) as Array<{ id: number }>)[0]?.id as number;
    const [a, b] = [await userId("backlog-a"), await userId("backlog-b")];
    await sql.unsafe(
      `INSERT INTO plants (owner_id, id, name, tag)
       SELECT $1::int, i, 'Plant ' || i, CASE WHEN i % 2 = 0 THEN 'seed' END FROM generate_series(1, $2::int) i`,
      [b, B_PLANTS],
    );
    const [row] = (await sql.unsafe(
      `INSERT INTO webhooks (owner_id, url, secret, created_at, change_cursor)
       VALUES ($1::int, $2, $3, now() - interval '6 hours',
         (SELECT coalesce(max(seq), 0) FROM plant_changes WHERE owner_id = $1::int)) RETURNING id`,
      [a, DOWN_URL, newSecret()],
    )) as Array<{ id: number }>;
    webhookId = (row as { id: number }).id;
    await sql`ANALYZE`;
  } finally {
    await sql.close();
  }
  // A copy of the empty database (its tokens and ids the same), then the deliveries, in one statement.
  const backlog = await createDatabase(cluster.url, "backlog_full", "backlog_empty");
  const full = new SQL(backlog, { max: 1 });
  try {
    await full.unsafe(
      `INSERT INTO webhook_deliveries (id, webhook_id, type, payload, status, attempts, created_at, next_attempt_at)
       SELECT 'msg_' || lpad(to_hex(i), 32, '0'), $1::int, 'plant.created', '{"id":' || i || ',"name":"x"}',
         'pending', 0, at, CASE WHEN $3::boolean THEN at ELSE now() END + interval '1 day'
       FROM generate_series(1, $2::int) i,
         LATERAL (SELECT CASE WHEN $3::boolean THEN now() - interval '3 hours' + i * (interval '3 hours' / $2::int)
           ELSE now() END AS at) t`,
      [webhookId, DELIVERIES, SPREAD],
    );
    await full`ANALYZE`;
    const [{ n }] = (await full`SELECT count(*)::int AS n FROM webhook_deliveries`) as [{ n: number }];
    if (n !== DELIVERIES) fail(`webhook backlog: built ${n} deliveries, not ${DELIVERIES}`);
  } finally {
    await full.close();
  }
  console.log(
    `Built ${fmt(DELIVERIES)} deliveries and ${fmt(B_PLANTS)} plants on PostgreSQL in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  const meta: Built = {
    version: CACHE_VERSION,
    key: migrationsKey(),
    builtAt,
    deliveries: DELIVERIES,
    tokenA,
    tokensB,
    webhookId,
  };
  return { empty, backlog, meta };
}

const authed = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

/** Checks both services answer B's page and A's log as expected; answers the length of one log entry's JSON. */
async function checkReady(backlog: Running, empty: Running, meta: Built): Promise<number> {
  for (const service of [backlog, empty]) {
    const response = await fetch(`${service.url}/plants?limit=20`, authed(meta.tokensB[0]));
    const page = (await response.json()) as unknown[];
    if (response.status !== 200 || page.length !== 20) fail(`webhook backlog: B's page answered ${response.status}`);
  }
  const logUrl = `${backlog.url}/webhooks/${meta.webhookId}/deliveries?limit=1`;
  const response = await fetch(logUrl, authed(meta.tokenA));
  const text = await response.text();
  const [first] = JSON.parse(text) as Array<{ status: string; nextAttemptAt: string }>;
  if (response.status !== 200 || first?.status !== "pending" || Date.parse(first.nextAttemptAt) < Date.now() + 3600_000)
    fail(`webhook backlog: A's log answered ${response.status} ${text}`);
  return text.length - 2;
}

/** Reads A's whole log with curl; its bytes and seconds, failing on anything but the whole log. */
async function readWholeLog(url: string, meta: Built, expectedBytes: number) {
  const proc = Bun.spawn(
    [
      "curl",
      "-sS",
      "-o",
      "/dev/null",
      "-w",
      "%{http_code} %{size_download} %{time_total}",
      "-H",
      `authorization: Bearer ${meta.tokenA}`,
      `${url}/webhooks/${meta.webhookId}/deliveries`,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  const [status, size, seconds] = out.trim().split(" ");
  if (code !== 0 || status !== "200" || Number(size) !== expectedBytes)
    fail(`webhook backlog: a whole log read got ${out} (exit ${code}, ${expectedBytes} bytes expected) ${err.trim()}`);
  return { bytes: Number(size), seconds: Number(seconds) };
}

const readB = (service: Running, meta: Built) => wrk(service.url, "read", [...meta.tokensB, "0"]);

interface StreamRun {
  wrk: WrkResult;
  /** Whole logs read, and their mean time. */
  reads: number;
  meanSeconds: number;
}

/** B's reads while STREAMS clients read A's whole log over and over; each client reads at least once. */
async function whileStreaming(backlog: Running, meta: Built, expectedBytes: number): Promise<StreamRun> {
  let streaming = true;
  const reads: Array<{ seconds: number }> = [];
  const clients = Array.from({ length: STREAMS }, async () => {
    do reads.push(await readWholeLog(backlog.url, meta, expectedBytes));
    while (streaming);
  });
  await Bun.sleep(300); // the streams under way before the load begins
  const result = await readB(backlog, meta);
  streaming = false;
  await Promise.all(clients);
  return { wrk: result, reads: reads.length, meanSeconds: median(reads.map((read) => read.seconds)) };
}

const line = (label: string, r: WrkResult) =>
  `${label.padEnd(28)} ${fmt(r.rps).padStart(7)} req/s  p50 ${fmt(r.p50, 2)} ms  p99 ${fmt(r.p99, 2)} ms  non-2xx ${r.non2xx}  socket errors ${r.errors}`;

/** The service under `bun --cpu-prof`, writing its profile in `profileDir`. */
const profiledTarget = (target: Target, profileDir: string): Target => ({
  ...target,
  command: [
    "bun",
    "--cpu-prof",
    `--cpu-prof-dir=${profileDir}`,
    "--max-http-header-size=16384",
    join(ROOT, "src/index.ts"),
  ],
});

/** A's and B's rounds on the two running services, their table and verdicts. */
async function measure(backlog: Running, empty: Running, meta: Built, engineNote: string) {
  const entryBytes = await checkReady(backlog, empty, meta);
  const expectedBytes = DELIVERIES * entryBytes + (DELIVERIES - 1) + 2;
  console.log(
    `\nWebhook backlog (issue 41)${engineNote} — ${fmt(DELIVERIES)} pending deliveries of user A, ${SPREAD ? "each due a day after its creation" : "all due at one time, in a day"}, against none; user B's reads (GET /plants?limit=20 over ${fmt(B_PLANTS)} plants, wrk -t2 -c${CONNECTIONS}, ${SECONDS} s); ${ROUNDS} alternating rounds; the service's defaults but the rate limit OFF (RATE_LIMIT_PER_MINUTE=0: the load is two tokens'); load ${await load()}\n`,
  );
  for (const service of [backlog, empty]) await wrk(service.url, "read", [...meta.tokensB, "0"], 1); // warm-up
  const results = { empty: [] as WrkResult[], backlog: [] as WrkResult[], streaming: [] as StreamRun[] };
  for (let round = 1; round <= ROUNDS; round++) {
    if (runA) {
      const order = round % 2 === 1 ? (["backlog", "empty"] as const) : (["empty", "backlog"] as const);
      for (const side of order) {
        const result = await readB(side === "backlog" ? backlog : empty, meta);
        results[side].push(result);
        console.log(
          `round ${round} ${line(side === "backlog" ? "backlog" : "empty outbox", result)}  load ${await load()}`,
        );
      }
    }
    if (runB) {
      const run = await whileStreaming(backlog, meta, expectedBytes);
      results.streaming.push(run);
      console.log(
        `round ${round} ${line(`backlog + ${STREAMS} streams`, run.wrk)}  (${run.reads} whole logs of ${fmt(expectedBytes / 1024 ** 2)} MiB, median ${run.meanSeconds.toFixed(1)} s each)  load ${await load()}`,
      );
    }
  }
  // The table once the services are stopped (a profiled one writes its profile on exit).
  return async () => {
    const med = (runs: WrkResult[], key: "rps" | "p50" | "p99") => median(runs.map((r) => r[key]));
    console.log("\n| run | req/s | p50 ms | p99 ms | errors |\n|---|---|---|---|---|");
    const row = (label: string, runs: WrkResult[]) =>
      runs.length > 0 &&
      console.log(
        `| ${label} | ${fmt(med(runs, "rps"))} | ${fmt(med(runs, "p50"), 2)} | ${fmt(med(runs, "p99"), 2)} | ${runs.reduce((n, r) => n + r.non2xx + r.errors, 0)} |`,
      );
    row("empty outbox", results.empty);
    row(`${fmt(DELIVERIES)} pending, not due`, results.backlog);
    row(
      `the same, ${STREAMS} clients streaming the whole log`,
      results.streaming.map((run) => run.wrk),
    );
    console.log("\n(medians of the rounds)\n");
    if (runA) {
      const ratios = results.backlog.map((r, i) => r.p50 / (results.empty[i] as WrkResult).p50);
      const rpsRatios = results.backlog.map((r, i) => r.rps / (results.empty[i] as WrkResult).rps);
      const ratio = median(ratios);
      console.log(
        `A: p50 with the backlog ${fmt(ratio, 2)}× of the empty outbox's (rounds ${ratios.map((r) => fmt(r, 2)).join(", ")}; req/s ${fmt(median(rpsRatios), 2)}×), target ≤ ${P50_BAR}×: ${ratio <= P50_BAR ? "met" : "NOT met"}`,
      );
    }
    if (runB) {
      const runs = results.streaming.map((run) => run.wrk);
      const [p50, p99] = [med(runs, "p50"), med(runs, "p99")];
      const worst = Math.max(...runs.map((r) => r.p99));
      console.log(
        `B: with ${STREAMS} whole-log streams, p50 ${fmt(p50, 1)} ms and p99 ${fmt(p99, 1)} ms (worst round's p99 ${fmt(worst, 1)} ms), target both < ${STREAM_BAR_MS} ms: ${p50 < STREAM_BAR_MS && p99 < STREAM_BAR_MS ? "met" : "NOT met"}`,
      );
    }
    console.log(`load ${await load()}`);
  };
}

async function printProfiles(profileDir: string) {
  const files = existsSync(profileDir) ? readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile")) : [];
  if (files.length === 0) fail(`no CPU profile was written in ${profileDir}`);
  for (const file of files) printProfile(join(profileDir, file));
}

async function main() {
  const { dir: cache, meta } = await built();
  const dir = mkdtempSync(join(tmpdir(), "plant-store-backlog-run-"));
  const profileDir = join(tmpdir(), `plant-store-backlog-profile-${Date.now()}`);
  const running: Running[] = [];
  try {
    for (const name of ["empty", "backlog"]) copyFileSync(join(cache, `${name}.sqlite`), join(dir, `${name}.sqlite`));
    const profiled = profiledTarget(SERVICE_LIMIT_OFF, profileDir);
    const backlog = await startTarget(profile ? profiled : SERVICE_LIMIT_OFF, join(dir, "backlog.sqlite"));
    running.push(backlog);
    const empty = await startTarget(SERVICE_LIMIT_OFF, join(dir, "empty.sqlite"));
    running.push(empty);
    const report = await measure(backlog, empty, meta, "");
    for (const service of running.splice(0)) await service.stop();
    await report();
    if (profile) await printProfiles(profileDir);
  } finally {
    for (const service of running) await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function mainPostgres() {
  if (Bun.spawnSync(["which", "wrk"]).exitCode !== 0) fail("wrk is not installed (apt-get install -y wrk)");
  let cluster: Cluster;
  try {
    cluster = await startCluster({ durable: true });
  } catch (error) {
    fail(`cannot start a PostgreSQL cluster: ${(error as Error).message}`);
  }
  const logs = mkdtempSync(join(tmpdir(), "plant-store-backlog-pg-"));
  const profileDir = join(tmpdir(), `plant-store-backlog-profile-${Date.now()}`);
  const guard = onFail(() => {
    cluster.stopNow();
    rmSync(logs, { recursive: true, force: true });
  });
  process.once("SIGINT", () => fail("interrupted"));
  const running: Running[] = [];
  try {
    const databases = await builtPostgres(cluster);
    const target = POSTGRES_TARGETS.serviceLimitOff;
    const backlog = await startTarget(
      profile ? profiledTarget(target, profileDir) : target,
      databases.backlog,
      join(logs, "backlog"),
    );
    running.push(backlog);
    const empty = await startTarget(target, databases.empty, join(logs, "empty"));
    running.push(empty);
    const report = await measure(backlog, empty, databases.meta, " on PostgreSQL (fsync and synchronous_commit on)");
    for (const service of running.splice(0)) await service.stop();
    await report();
    if (profile) await printProfiles(profileDir);
  } finally {
    for (const service of running) await service.stop();
    await cluster.stop();
    guard.release();
    rmSync(logs, { recursive: true, force: true });
  }
}

await (ENGINE === "postgres" ? mainPostgres() : main());
