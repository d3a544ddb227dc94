/**
 * Start-up beside a PostgreSQL that is not there yet, or has no connection to spare, and what
 * an idle instance holds: real processes on a cluster of the test's own (so halting it
 * disturbs no other test).
 */
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { type Cluster, createDatabase, startCluster } from "../../scripts/pg-cluster";
import { onPostgres } from "../support/helpers";
import { DIRECT, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const ROOT = new URL("../..", import.meta.url).pathname;
const RETRY_LINE = /^plant-store: cannot reach the database at \S+ yet: .+; trying again in \d+\.\d\d s/m;

let cluster: Cluster;
let databases = 0;
const running: Array<{ kill(signal?: number): void; exited: Promise<number> }> = [];

beforeAll(async () => {
  if (onPostgres) cluster = await startCluster();
});
afterEach(async () => {
  for (const proc of running.splice(0)) {
    proc.kill(9);
    await proc.exited;
  }
});
afterAll(async () => {
  await cluster?.stop();
});

/** The server as a process whose output is read from the start, before it listens. */
function spawnServer(env: Record<string, string>) {
  const proc = Bun.spawn(DIRECT, {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  running.push(proc);
  const text = { stdout: "", stderr: "" };
  const read = async (stream: ReadableStream<Uint8Array>, into: "stdout" | "stderr") => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) text[into] += decoder.decode(chunk, { stream: true });
  };
  const reading = Promise.all([read(proc.stdout, "stdout"), read(proc.stderr, "stderr")]);
  const output = async () => {
    await Promise.all([proc.exited, reading]);
    return text;
  };
  return { proc, text, output };
}

/** Waits for the "listening" line and answers its URL. */
async function listeningUrl(server: ReturnType<typeof spawnServer>): Promise<string> {
  const match = await until(() => /listening on (http:\/\/\S+)/.exec(server.text.stdout)?.[1], {
    timeoutMs: 20_000,
    what: "the listening line",
  });
  return match as string;
}

describe.if(onPostgres)("start-up against a PostgreSQL that is not ready", () => {
  test("a server not up yet: each wait is said on stderr without the password, and the service comes up once the server does", async () => {
    const url = new URL(await createDatabase(cluster.url, `startup_${++databases}`));
    const password = `pw-${crypto.randomUUID()}`;
    url.password = password; // trust authentication: only the messages see it
    await cluster.halt();
    const server = spawnServer({ DATABASE_URL: url.toString() });
    try {
      await until(() => server.text.stderr.match(new RegExp(RETRY_LINE.source, "gm"))?.length ?? 0, {
        holds: (n) => n >= 2,
        what: "two retry lines",
      });
    } finally {
      await cluster.resume();
    }
    const base = await listeningUrl(server);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    server.proc.kill("SIGTERM");
    expect(await server.proc.exited).toBe(0);
    const { stdout, stderr } = await server.output();
    expect(`${stdout}${stderr}`).not.toContain(password);
    for (const line of stderr.trim().split("\n")) expect(line).toMatch(RETRY_LINE);
    expect(stderr).toContain(url.toString().replace(password, "***"));
  });

  test("a server out of connections for our role: retried until one is free", async () => {
    const admin = new SQL(cluster.url, { max: 1 });
    const role = `startup_role_${++databases}`;
    await admin.unsafe(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 0`);
    const url = new URL(await createDatabase(cluster.url, `startup_${databases}`));
    await admin.unsafe(`ALTER DATABASE startup_${databases} OWNER TO ${role}`);
    url.username = role;
    const server = spawnServer({ DATABASE_URL: url.toString() });
    try {
      await until(() => server.text.stderr, { holds: (text) => /too many connections/.test(text), what: "a retry" });
      expect(server.text.stderr).toMatch(RETRY_LINE);
      await admin.unsafe(`ALTER ROLE ${role} CONNECTION LIMIT 50`);
      const base = await listeningUrl(server);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
    } finally {
      await admin.close();
    }
    server.proc.kill("SIGTERM");
    expect(await server.proc.exited).toBe(0);
  });

  test("past DB_STARTUP_TIMEOUT_MS: one last line naming the database, and exit 1", async () => {
    const url = new URL(await createDatabase(cluster.url, `startup_${++databases}`));
    await cluster.halt();
    try {
      const began = performance.now();
      const server = spawnServer({ DATABASE_URL: url.toString(), DB_STARTUP_TIMEOUT_MS: "1500" });
      expect(await server.proc.exited).toBe(1);
      expect(performance.now() - began).toBeGreaterThan(1_500);
      const lines = (await server.output()).stderr.trim().split("\n");
      expect(lines.length).toBeGreaterThan(1);
      for (const line of lines.slice(0, -1)) expect(line).toMatch(RETRY_LINE);
      expect(lines.at(-1)).toStartWith(`plant-store: cannot open the database at ${url}: `);
    } finally {
      await cluster.resume();
    }
  });
});

describe.if(onPostgres)("an idle instance's pool", () => {
  test("an idle instance holds at most two connections, though its pool has ten", async () => {
    const url = await createDatabase(cluster.url, `idle_${++databases}`);
    const name = new URL(url).pathname.slice(1);
    const server = await startServer({ DATABASE_URL: url, DB_POOL_SIZE: "10" });
    const admin = new SQL(cluster.url, { max: 1 });
    try {
      const held = async () =>
        (
          (await admin.unsafe("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1", [name])) as [
            { n: number },
          ]
        )[0].n;
      await until(held, { holds: (n) => n <= 2, timeoutMs: 25_000, intervalMs: 250, what: "at most 2 connections" });
      // And it stays so while the instance idles (webhook polls, readiness pings).
      const seen: number[] = [];
      for (let i = 0; i < 10; i++) {
        expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
        seen.push(await held());
        await Bun.sleep(200);
      }
      expect(Math.max(...seen)).toBeLessThanOrEqual(2);
    } finally {
      await admin.close();
      expect(await server.stop()).toBe(0);
    }
  });
});
