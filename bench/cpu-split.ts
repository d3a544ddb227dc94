/**
 * Where the CPU goes under load on PostgreSQL: one service instance against the PostgreSQL
 * server's processes, in CPU time per request, for the capacity model in docs/scaling.md
 * (Capacity, from the bench). A durable throwaway cluster, 2,000 plants over two users, 5 s of each wrk scenario.
 *
 *   bun bench/cpu-split.ts
 */
import { createDatabase, startCluster } from "../scripts/pg-cluster";
import { runCli, startServer } from "../tests/support/process";
import { SCENARIOS } from "./rounds";
import { cpuSeconds } from "./targets";
import { wrk } from "./wrk";

/** A gone process counts as no CPU. */
const cpuSecondsOf = (pid: number) => cpuSeconds(pid) ?? 0;

const SECONDS = 5;
const children = (pid: number) =>
  Bun.spawnSync(["pgrep", "-P", String(pid)])
    .stdout.toString()
    .trim()
    .split("\n")
    .filter(Boolean)
    .map(Number);

/** CPU seconds of a process and everything under it (`bun run` and its server). */
const treeSeconds = (pid: number): number =>
  cpuSecondsOf(pid) + children(pid).reduce((sum, c) => sum + treeSeconds(c), 0);

const cluster = await startCluster({ durable: true });
try {
  const env = { DATABASE_URL: await createDatabase(cluster.url, "cpu_split"), RATE_LIMIT_PER_MINUTE: "0" };
  const server = await startServer(env);
  const token = async (user: string) =>
    (await runCli(["token", "create", "--user", user], env)).stdout.trim().split("\n").at(-1) as string;
  const tokens = [await token("a"), await token("b")];
  for (let id = 0; id < 1000; id++) {
    for (const t of tokens) {
      await fetch(`${server.url}/plants`, {
        method: "POST",
        headers: { authorization: `Bearer ${t}`, "content-type": "application/json" },
        body: `{"id":${id},"name":"p${id}"}`,
      });
    }
  }
  await wrk(server.url, "read", [...tokens, "0"], 2);
  let idBase = 1_000_000_000;
  for (const scenario of SCENARIOS) {
    const postgresSeconds = () => cluster.serverPids().reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
    const before = { service: treeSeconds(server.pid), postgres: postgresSeconds() };
    idBase += 1_000_000_000;
    const result = await wrk(server.url, scenario, [...tokens, String(idBase)], SECONDS);
    const service = treeSeconds(server.pid) - before.service;
    const postgres = postgresSeconds() - before.postgres;
    const perRequestUs = (cpu: number) => ((cpu / (result.rps * SECONDS)) * 1e6).toFixed(0);
    console.log(
      `${scenario}: ${Math.round(result.rps)} req/s; CPU over ${SECONDS} s: service ${service.toFixed(2)} s, PostgreSQL ${postgres.toFixed(2)} s; per request: service ${perRequestUs(service)} µs, PostgreSQL ${perRequestUs(postgres)} µs`,
    );
  }
  await server.stop();
} finally {
  await cluster.stop();
}
