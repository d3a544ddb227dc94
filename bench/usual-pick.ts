/**
 * The usual alternative to the service, as a contender beside it and the floor on SQLite:
 * Fastify + better-sqlite3 on Node (bench/contenders/fastify/). It has a package.json and lock
 * of its own, installed here on demand with `npm ci`, never by the root `bun install`:
 * better-sqlite3 is a native module (a prebuilt binary, or a build with node-gyp).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { errorCount, figure, pairedRatio, type Results, SCENARIOS } from "./rounds";
import { fail, fmt, ROOT, type TargetName } from "./targets";

export const FASTIFY_DIR = join(ROOT, "bench/contenders/fastify");
const NATIVE_MODULE = join(FASTIFY_DIR, "node_modules/better-sqlite3/build/Release/better_sqlite3.node");

/** Installs the contender's packages when they are missing (`npm ci`, a few minutes when better-sqlite3 builds). */
export function ensureFastifyInstalled(): void {
  if (Bun.spawnSync(["node", "--version"]).exitCode !== 0)
    fail("node is not installed (the Fastify contender runs on Node)");
  if (existsSync(join(FASTIFY_DIR, "node_modules/fastify/package.json")) && existsSync(NATIVE_MODULE)) return;
  console.log("installing the Fastify contender: npm ci --prefix bench/contenders/fastify");
  const install = Bun.spawnSync(["npm", "ci", "--prefix", FASTIFY_DIR, "--no-audit", "--no-fund"], {
    stdout: "inherit",
    stderr: "inherit",
  });
  if (install.exitCode !== 0) fail("npm ci --prefix bench/contenders/fastify failed");
}

/** Table D: the service and the usual pick, each against the floor and against each other. */
export function printUsualPick(results: Results<TargetName>, rss: Record<TargetName, number>): void {
  console.log(
    "\nD. The usual pick — fastify: Fastify + better-sqlite3 on Node (bench/contenders/fastify/), synchronous=NORMAL as the floor (at FULL each write waits for its own fsync), one write per transaction, one pino line per request, no rate limit; service and floor as in B\n",
  );
  console.log(
    "| scenario | floor req/s | service req/s | fastify req/s | service / fastify | fastify / floor | p99 ms floor / service / fastify | fastify non-2xx + socket errors |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const scenario of SCENARIOS) {
    const rps = (name: TargetName) => fmt(figure(results, name, scenario, "rps"));
    const p99 = (name: TargetName) => fmt(figure(results, name, scenario, "p99"), 2);
    console.log(
      `| ${scenario} | ${rps("floor")} | ${rps("service")} | ${rps("fastify")} | **${fmt(pairedRatio(results, "service", "fastify", scenario, "rps"), 2)}×** | ${fmt(pairedRatio(results, "fastify", "floor", scenario, "rps"), 2)}× | ${p99("floor")} / ${p99("service")} / ${p99("fastify")} | ${errorCount(results, "fastify", scenario)} |`,
    );
  }
  const mib = (name: TargetName) => `${fmt(rss[name] / 1024, 1)}`;
  console.log(`| peak RSS MiB | ${mib("floor")} | ${mib("service")} | ${mib("fastify")} | | | | |`);
}
