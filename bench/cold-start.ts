/**
 * Cold start: launch to the first successful authenticated request, the median of a few
 * launches on the store the load left behind.
 *
 * Against the like-for-like baseline the server process is launched directly. Against the
 * floor both go through `bun run <package.json script>` (`start`, `bench:floor`), as an
 * operator starts the service: bun run then launches the server as a second Bun process. The
 * floor gets a script of its own rather than `bun run bench/baseline/server.ts`, which would
 * run the file inside bun run's own process and spare the floor one of the two Bun start-ups
 * the service pays for.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDatabase, startCluster } from "../scripts/pg-cluster";
import { ENGINE } from "./options";
import { cli, fail, fmt, median, onFail, POSTGRES_TARGETS, startTarget, type Target, target } from "./targets";

/** Launches of each side; their median is the side's cold start. */
export const LAUNCHES = 7;

export interface ColdStartOptions {
  /** Where the servers' output goes (startTarget's logPrefix); by default beside the database file. */
  logPrefix?: string;
  viaBunRun?: boolean;
}

/** One side of a cold-start comparison: `target` launched on `database`, asked with `token`. */
export interface ColdSide<Name extends string = string> extends ColdStartOptions {
  name: Name;
  target: Target;
  database: string;
  token: string;
}

/**
 * The median, in ms, of `launches` launches of each side, each to its first answer to
 * `GET /plants?limit=1`. The launches alternate: every round launches each side once, in an
 * order that rotates from round to round, so a change in the machine's load falls on every
 * side alike (launched side after side, five each, one PostgreSQL run measured the same
 * service at 2.15× the floor and the run before at 1.84×).
 */
export async function coldStarts<Name extends string>(
  sides: readonly ColdSide<Name>[],
  launches = LAUNCHES,
): Promise<Record<Name, number>> {
  const times: number[][] = sides.map(() => []);
  for (let round = 0; round < launches; round++) {
    for (let k = 0; k < sides.length; k++) {
      const i = (round + k) % sides.length;
      const { target, database, token, ...options } = sides[i] as ColdSide<Name>;
      (times[i] as number[]).push(await launchOnce(target, database, token, options));
    }
  }
  return Object.fromEntries(sides.map(({ name }, i) => [name, median(times[i] as number[])])) as Record<Name, number>;
}

/** One launch of `target` to its first authenticated 200, in ms. */
async function launchOnce(
  target: Target,
  database: string,
  token: string,
  { logPrefix = database, viaBunRun = false }: ColdStartOptions,
): Promise<number> {
  const started = performance.now();
  const server = await startTarget(target, database, logPrefix, viaBunRun);
  const response = await fetch(`${server.url}/plants?limit=1`, { headers: { authorization: `Bearer ${token}` } });
  const elapsed = performance.now() - started;
  await response.arrayBuffer();
  await server.stop();
  if (response.status !== 200) fail(`${target.name}: the cold-start request got ${response.status}, not 200`);
  return elapsed;
}

/** The service and the floor on one engine: their targets, and a database each. */
interface Sides {
  sides: Array<{ side: Target; database: string }>;
  logPrefix?: string;
  close(): Promise<void>;
}

async function sqliteSides(): Promise<Sides> {
  const dir = mkdtempSync(join(tmpdir(), "plant-store-cold-"));
  const cleanup = onFail(() => rmSync(dir, { recursive: true, force: true }));
  return {
    sides: [target("service"), target("floor")].map((side) => ({ side, database: join(dir, `${side.name}.sqlite`) })),
    async close() {
      rmSync(dir, { recursive: true, force: true });
      cleanup.release();
    },
  };
}

/** A throwaway cluster with a database each; the floor is bench/postgres.ts's. */
async function postgresSides(): Promise<Sides> {
  const cluster = await startCluster({ durable: true });
  const cleanup = onFail(() => cluster.stopNow());
  const logs = mkdtempSync(join(tmpdir(), "plant-store-cold-logs-"));
  const [service, floor] = await Promise.all([
    createDatabase(cluster.url, "cold_service"),
    createDatabase(cluster.url, "cold_floor"),
  ]);
  return {
    sides: [
      { side: POSTGRES_TARGETS.service, database: service },
      { side: POSTGRES_TARGETS.floor, database: floor },
    ],
    logPrefix: join(logs, "cold"),
    async close() {
      await cluster.stop();
      rmSync(logs, { recursive: true, force: true });
      cleanup.release();
    },
  };
}

/**
 * `bun bench/cold-start.ts [launches] [--engine postgres]` (default 10 launches, SQLite): cold
 * start alone, the service through `bun run start` against the floor through `bun run
 * bench:floor` (or `bench:floor:postgres`), each on a fresh store with a token, launches
 * alternating (coldStarts) so both see the same background load.
 */
async function alone(launches: number) {
  const { sides, logPrefix, close } = await (ENGINE === "postgres" ? postgresSides() : sqliteSides());
  try {
    // The floor reads the tokens table the service's migrations make: the service's CLI makes it on both.
    const tokens = await Promise.all(sides.map(({ database }) => cli(["token", "create", "--user", "cold"], database)));
    const medians = await coldStarts(
      sides.map(({ side, database }, i) => ({
        name: side.name,
        target: side,
        database,
        token: tokens[i] as string,
        viaBunRun: true,
        ...(logPrefix && { logPrefix }),
      })),
      launches,
    );
    const [service, floor] = sides.map(({ side }) => medians[side.name] as number) as [number, number];
    const floorScript = sides[1]?.side.script;
    console.log(`${ENGINE}: service (bun run start) median ${fmt(service, 1)} ms`);
    console.log(`${ENGINE}: floor (bun run ${floorScript}) median ${fmt(floor, 1)} ms`);
    console.log(`ratio ${fmt(service / floor, 2)}× (${launches} launches each)`);
  } finally {
    await close();
  }
}

if (import.meta.main) {
  const given = process.argv[2];
  const launches = given === undefined || given.startsWith("--") ? 10 : Number(given);
  if (!Number.isInteger(launches) || launches < 1) fail(`launches must be a positive integer, not ${given}`);
  await alone(launches);
}
