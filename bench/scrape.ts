/**
 * `bun bench/scrape.ts [checkout]`: what a metrics scrape costs on a 1,000,000-plant store,
 * and what 8 scrapers running flat out do to another user's reads.
 *
 * Seeds 1,000 users of 1,000 plants straight into a temporary file, starts the service of
 * `checkout` (default: this one) with METRICS_PORT=0, then measures: 200 scrapes one after
 * another; 2,000 reads (`GET /plants?limit=20`) alone; the same reads while 8 loops scrape.
 * A checkout whose start-up line names no metrics URL is scraped at its main URL's /metrics
 * (the code before metrics moved to their own listener), so both can be compared:
 *   git archive <commit> | tar -x -C /tmp/old && ln -s "$PWD/node_modules" /tmp/old/
 *   bun bench/scrape.ts /tmp/old
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(process.argv[2] ?? new URL("..", import.meta.url).pathname);
const USERS = 1000;
const PER_USER = 1000;
const SCRAPES = 200;
const READS = 2000;
const SCRAPERS = 8;

function fail(message: string): never {
  console.error(`scrape bench: ${message}`);
  process.exit(1);
}

function seed(path: string) {
  const db = new Database(path);
  const insertUser = db.prepare("INSERT INTO users (name, created_at) VALUES (?, 0) RETURNING id");
  const insertPlant = db.prepare("INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, 'seed')");
  db.transaction(() => {
    for (let u = 0; u < USERS - 1; u++) {
      const { id } = insertUser.get(`filler-${u}`) as { id: number };
      for (let p = 1; p <= PER_USER; p++) insertPlant.run(id, p, `Filler ${p}`);
    }
    // The reader, created by the CLI, gets its share too.
    const reader = db.query("SELECT id FROM users WHERE name = 'reader'").get() as { id: number };
    for (let p = 1; p <= PER_USER; p++) insertPlant.run(reader.id, p, `Mine ${p}`);
  })();
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
}

async function start(path: string, logPath: string) {
  const proc = Bun.spawn(["bun", "--max-http-header-size=16384", join(ROOT, "src/index.ts")], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: "0",
      HOST: "127.0.0.1",
      METRICS_PORT: "0",
      DATABASE_URL: path,
      RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "warn",
    },
    stdout: Bun.file(logPath),
    stderr: "inherit",
  });
  const deadline = performance.now() + 30_000;
  for (;;) {
    const output = (await Bun.file(logPath).exists()) ? await Bun.file(logPath).text() : "";
    const url = /listening on (http:\/\/[^\s"]+)/.exec(output)?.[1];
    if (url) {
      const metrics = /metrics at (http:\/\/[^\s")]+)/.exec(output)?.[1] ?? `${url}/metrics`;
      const stop = () => {
        proc.kill("SIGTERM");
        return proc.exited;
      };
      return { url, metrics, stop };
    }
    if (performance.now() > deadline) fail(`no listening line: ${output}`);
    await Bun.sleep(5);
  }
}

async function timed(url: string, headers: Record<string, string> = {}): Promise<number> {
  const started = performance.now();
  const response = await fetch(url, { headers });
  await response.arrayBuffer();
  if (response.status !== 200) fail(`${url} answered ${response.status}`);
  return performance.now() - started;
}

function summary(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number).toFixed(2);
  return `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`;
}

async function reads(url: string, token: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < READS; i++)
    times.push(await timed(`${url}/plants?limit=20`, { authorization: `Bearer ${token}` }));
  return times;
}

const dir = mkdtempSync(join(tmpdir(), "plant-store-scrape-"));
try {
  const path = join(dir, "plants.sqlite");
  const cli = Bun.spawnSync(["bun", join(ROOT, "src/cli.ts"), "token", "create", "--user", "reader"], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: path },
  });
  if (cli.exitCode !== 0) fail(`token create failed: ${cli.stderr}`);
  const token = cli.stdout.toString().trim().split("\n").at(-1) as string;
  seed(path);
  const server = await start(path, join(dir, "server.log"));
  try {
    console.log(`${ROOT}: ${USERS * PER_USER} plants; metrics at ${server.metrics}`);
    for (let i = 0; i < 20; i++) await timed(server.metrics);
    const scrapes: number[] = [];
    for (let i = 0; i < SCRAPES; i++) scrapes.push(await timed(server.metrics));
    console.log(`scrape, one at a time: ${summary(scrapes)}`);

    await reads(server.url, token);
    console.log(`reads alone: ${summary(await reads(server.url, token))}`);
    let scraping = true;
    const scrapers = Array.from({ length: SCRAPERS }, async () => {
      let n = 0;
      while (scraping) {
        await timed(server.metrics);
        n++;
      }
      return n;
    });
    const started = performance.now();
    const underLoad = await reads(server.url, token);
    scraping = false;
    const scraped = (await Promise.all(scrapers)).reduce((a, b) => a + b, 0);
    const rate = Math.round(scraped / ((performance.now() - started) / 1000));
    console.log(`reads with ${SCRAPERS} scrapers (${rate} scrapes/s): ${summary(underLoad)}`);
  } finally {
    await server.stop();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
