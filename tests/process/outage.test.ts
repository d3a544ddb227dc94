/**
 * PostgreSQL going away under load, as real processes: two instances on a cluster of the test's
 * own (so halting it disturbs no other test), a write load running through both, then the
 * server stopped (connections refused) or frozen (SIGSTOP: connections open, nothing answers).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type Cluster, createDatabase, startCluster } from "../../scripts/pg-cluster";
import { onPostgres } from "../support/helpers";
import { HANG_MS, statusOf, storedIds, type WriteLoad, writeLoad } from "../support/load";
import { type RunningServer, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/** Small timeouts so the failure answers come fast; the deadline is their sum. */
const CONNECT_TIMEOUT_MS = 1_000;
const STATEMENT_TIMEOUT_MS = 1_000;
const TOKEN_LINE = /^pst_[A-Za-z0-9_-]{43}$/m;

let cluster: Cluster;
let databases = 0;

beforeAll(async () => {
  if (onPostgres) cluster = await startCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

interface Instances {
  servers: RunningServer[];
  token: string;
}

async function startInstances(count: number): Promise<Instances> {
  const url = await createDatabase(cluster.url, `outage_${++databases}`);
  const env = {
    DATABASE_URL: url,
    DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
    DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
    RATE_LIMIT_PER_MINUTE: "0",
  };
  const first = await startServer(env);
  const token = first.startupOutput.match(TOKEN_LINE)?.[0] as string;
  expect(token).toBeDefined();
  const others = await Promise.all(Array.from({ length: count - 1 }, () => startServer(env)));
  return { servers: [first, ...others], token };
}

async function stopAll({ servers }: Instances) {
  const codes = await Promise.all(servers.map((server) => server.stop()));
  expect(codes).toEqual(servers.map(() => 0));
}

/** Polls an instance's /readyz until it answers `status` or `ms` pass, and expects that answer. */
async function expectReadiness(server: RunningServer, status: number, ms: number) {
  expect(await until(() => statusOf(`${server.url}/readyz`), { holds: (s) => s === status, timeoutMs: ms })).toBe(
    status,
  );
}

async function expectOutageAnswers(instances: Instances, what: RegExp) {
  for (const server of instances.servers) {
    // Readiness turns 503 within seconds: the load balancer stops sending traffic.
    await expectReadiness(server, 503, 5_000);
    // Liveness stays 200: nothing is wrong with the process, so nobody restarts it.
    expect(await statusOf(`${server.url}/healthz`)).toBe(200);
    // A whole list and a page.
    for (const path of ["/plants", "/plants?limit=20"]) {
      const began = performance.now();
      const listed = await fetch(`${server.url}${path}`, {
        headers: { authorization: `Bearer ${instances.token}` },
        signal: AbortSignal.timeout(HANG_MS),
      });
      expect(performance.now() - began).toBeLessThan(HANG_MS);
      expect(listed.status).toBe(503);
      const body = (await listed.json()) as { error: number; message: string };
      expect(body.error).toBe(503);
      expect(body.message).toMatch(what);
    }
  }
}

async function expectRecovered(instances: Instances, load: WriteLoad) {
  for (const server of instances.servers) {
    await expectReadiness(server, 200, 15_000);
  }
  // Writes go through again on every instance, without a restart.
  const before = load.acknowledged.length;
  await until(async () => load.acknowledged.length, { holds: (n) => n >= before + 50, timeoutMs: 15_000 });
  await load.stop();
  expect(load.acknowledged.length).toBeGreaterThanOrEqual(before + 50);
  expect(load.wrong).toEqual([]);
  expect(load.unanswered).toEqual([]);
  // No acknowledged create was lost; every instance lists the same store.
  for (const server of instances.servers) {
    const stored = await storedIds(server.url, instances.token);
    expect(load.acknowledged.filter((id) => !stored.has(id))).toEqual([]);
  }
}

describe.if(onPostgres)("PostgreSQL going away under load (two instances)", () => {
  test("stopped: readiness 503 within seconds, liveness 200, requests a fast 503 Error body; back on its own after a restart of PostgreSQL", async () => {
    const instances = await startInstances(2);
    const load = writeLoad(
      instances.servers.map((server) => server.url),
      instances.token,
    );
    await until(async () => load.acknowledged.length, { holds: (n) => n >= 100, timeoutMs: 10_000 });
    await cluster.halt();
    await expectOutageAnswers(instances, /cannot be reached/);
    const refusedBefore = load.refused.length;
    await until(async () => load.refused.length, { holds: (n) => n >= refusedBefore + 20, timeoutMs: 5_000 });
    expect(load.refused.length).toBeGreaterThanOrEqual(refusedBefore + 20);
    await cluster.resume();
    await expectRecovered(instances, load);
    await stopAll(instances);
  }, 60_000);

  test("frozen (SIGSTOP, sockets open): requests answer 503 at the deadline instead of hanging; it recovers when it thaws", async () => {
    const instances = await startInstances(2);
    const load = writeLoad(
      instances.servers.map((server) => server.url),
      instances.token,
    );
    await until(async () => load.acknowledged.length, { holds: (n) => n >= 100, timeoutMs: 10_000 });
    const pids = cluster.serverPids();
    for (const pid of pids) process.kill(pid, "SIGSTOP");
    try {
      await expectOutageAnswers(instances, /did not answer in time/);
    } finally {
      for (const pid of pids) process.kill(pid, "SIGCONT");
    }
    await expectRecovered(instances, load);
    await stopAll(instances);
  }, 60_000);
});
