/**
 * PostgreSQL's statement grouping, each device against the same code without it
 * (docs/decisions/0002-postgres-statement-grouping.md):
 *
 *   bun bench/pg-grouping.ts [variant.patch ...]
 *
 * The committed tree (`git archive HEAD`) runs as "HEAD"; each patch (by default every
 * bench/pg-grouping/*.patch) applied to a copy of it is one more variant. Every variant is a
 * service process as `bun run start` runs it, with the default settings (the per-token rate
 * limit on), on its own database of one durable throwaway cluster (fsync and synchronous_commit
 * on). The read, write and mix scenarios run in alternating rounds (bench/rounds.ts; BENCH_ROUNDS,
 * BENCH_SECONDS, BENCH_CONNECTIONS), each wrk thread spreading its user's requests over
 * TOKENS_PER_USER tokens (bench/lua/many-tokens.lua) so that the rate limit does not throttle the load.
 */
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { type Cluster, createDatabase, startCluster } from "../scripts/pg-cluster";
import { connect, migrate } from "../src/db/postgres/client";
import { createPostgresTokenStore } from "../src/db/postgres/tokens";
import { readyForLoad, runRounds, SCENARIOS, type TokenPair } from "./rounds";
import { fail, fmt, median, onFail, peakRssKiB, ROOT } from "./targets";
import { wrk } from "./wrk";

const TOKENS_PER_USER = 50;
const PATCH_DIR = join(ROOT, "bench/pg-grouping");

interface Variant {
  name: string;
  dir: string;
}

function run(argv: string[], cwd: string) {
  const done = Bun.spawnSync(argv, { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  if (!done.success) fail(`${argv.join(" ")} failed: ${done.stderr.toString().trim()}`);
}

/** The committed tree, patched, in a folder of its own that shares this checkout's node_modules. */
function buildVariant(root: string, patch: string | undefined): Variant {
  const name = patch === undefined ? "HEAD" : basename(patch, ".patch");
  const dir = join(root, name);
  run(["mkdir", "-p", dir], root);
  run(["sh", "-c", `git -C '${ROOT}' archive HEAD | tar -x -C '${dir}'`], root);
  if (patch !== undefined) run(["patch", "-p1", "--quiet", "-i", patch], dir);
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  return { name, dir };
}

async function issueTokens(url: string, user: string, count: number): Promise<string[]> {
  const { client } = connect({
    engine: "postgres",
    url,
    poolSize: 2,
    connectTimeoutMs: 5_000,
    statementTimeoutMs: 10_000,
  });
  try {
    await migrate(client);
    const tokens = createPostgresTokenStore(client);
    const issued: string[] = [];
    for (let i = 0; i < count; i++) issued.push((await tokens.issue(user)).token);
    return issued;
  } finally {
    await client.close();
  }
}

/** Starts `bun run start`'s command in the variant's folder; its output goes to a file. */
async function startService(variant: Variant, database: string, logs: string) {
  const log = join(logs, `${variant.name}.log`);
  const proc = Bun.spawn(["bun", "--max-http-header-size=16384", "src/index.ts"], {
    cwd: variant.dir,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", DATABASE_URL: database },
    stdout: Bun.file(log),
    stderr: "inherit",
  });
  for (;;) {
    const url = /listening on (http:\/\/[^\s"]+)/.exec(
      await Bun.file(log)
        .text()
        .catch(() => ""),
    )?.[1];
    if (url) return { url, proc };
    if (proc.exitCode !== null) fail(`${variant.name} exited before listening`);
    await Bun.sleep(10);
  }
}

const args = process.argv.slice(2);
const patches =
  args.length > 0
    ? args
    : readdirSync(PATCH_DIR)
        .filter((f) => f.endsWith(".patch"))
        .map((f) => join(PATCH_DIR, f));
if (Bun.spawnSync(["which", "wrk"]).exitCode !== 0) fail("wrk is not installed (apt-get install -y wrk)");
const root = mkdtempSync(join(tmpdir(), "plant-store-grouping-"));
let cluster: Cluster | undefined;
const servers: Array<{ proc: { kill(): void } }> = [];
onFail(() => {
  for (const server of servers) server.proc.kill();
  cluster?.stopNow();
  rmSync(root, { recursive: true, force: true });
});
const variants = [undefined, ...patches].map((patch) => buildVariant(root, patch));
cluster = await startCluster({ durable: true });
const contenders = [];
const pids: Record<string, number> = {};
for (const variant of variants) {
  const database = await createDatabase(cluster.url, `bench_${variant.name.replaceAll("-", "_")}`);
  const seeders = [...(await issueTokens(database, "bench-a", 1)), ...(await issueTokens(database, "bench-b", 1))];
  const load = [
    ...(await issueTokens(database, "bench-a", TOKENS_PER_USER)),
    ...(await issueTokens(database, "bench-b", TOKENS_PER_USER)),
  ];
  const server = await startService(variant, database, root);
  servers.push(server);
  pids[variant.name] = server.proc.pid;
  await readyForLoad(variant.name, server.url, seeders as TokenPair);
  contenders.push({
    name: variant.name,
    run: (scenario: (typeof SCENARIOS)[number], idBase: number) => {
      process.env.BENCH_SCENARIO = scenario;
      return wrk(server.url, "many-tokens", [`${idBase}`, `${TOKENS_PER_USER}`, ...load]);
    },
  });
}
const results = await runRounds(contenders);

console.log(`\n| variant | scenario | req/s per round | median | p99 ms per round | median | vs HEAD (req/s, p99) |`);
console.log("|---|---|---|---|---|---|---|");
for (const scenario of SCENARIOS) {
  for (const { name } of variants) {
    const runs = results[name]?.[scenario] ?? [];
    const head = results.HEAD?.[scenario] ?? [];
    const rpsRatio = median(runs.map((r, i) => r.rps / (head[i]?.rps ?? Number.NaN)));
    const p99Ratio = median(runs.map((r, i) => r.p99 / (head[i]?.p99 ?? Number.NaN)));
    const errors = runs.reduce((sum, r) => sum + r.non2xx + r.errors, 0);
    console.log(
      `| ${name} | ${scenario} | ${runs.map((r) => fmt(r.rps)).join(", ")} | ${fmt(median(runs.map((r) => r.rps)))} | ${runs.map((r) => fmt(r.p99, 1)).join(", ")} | ${fmt(median(runs.map((r) => r.p99)), 1)} | ${fmt(rpsRatio, 2)}x, ${fmt(p99Ratio, 2)}x${errors > 0 ? ` (${errors} non-2xx or errors)` : ""} |`,
    );
  }
}
const peaks = [];
for (const { name } of variants) peaks.push(`${name} ${fmt((await peakRssKiB(pids[name] as number)) / 1024, 1)}`);
console.log(`\npeak RSS (MiB): ${peaks.join(", ")}`);
for (const server of servers) server.proc.kill();
await cluster.stop();
rmSync(root, { recursive: true, force: true });
