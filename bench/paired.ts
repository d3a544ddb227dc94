/**
 * Two checkouts (or one with two settings) measured at the same time, for a CPU figure a shared
 * machine does not move: both servers run on core 0 together, each driven by its own wrk on
 * core 1, so whatever the machine does to one it does to the other in the same seconds.
 *
 *   bun bench/paired.ts <dirA> <dirB> [--scenario read|write|mix|delete|update] [--rounds N]
 *                       [--seconds S] [--env-a K=V,…] [--env-b K=V,…]
 *
 * Each round: a fresh SQLite store per side, two tokens from each side's CLI, each side's
 * `src/index.ts` with RATE_LIMIT_PER_MINUTE=0 (one wrk is far past any per-token budget) and
 * its --env, a 1 s write warm-up on both, then the scenario (bench/lua/) on both for --seconds.
 * For `delete`, the plants its requests delete are put in each store by SQL before its server
 * starts (DELETE_ROOM a second, more than a delete run answers), each deleted once; for `update`,
 * UPDATE_PLANTS plants, whose ETags the server is asked before the run (bench/lua/update.lua).
 * The figure is server CPU µs per request (user and system, all threads, /proc): B/A per round,
 * then the median (requests answered are no throughput ratio here: the scheduler shares core 0 by
 * thread, and a side whose writer thread works more gets more of it). Alternating rounds (bench/compare.ts) see the machine's slow and fast
 * spells at different times; the same code against itself here stays within about ±3 % a
 * round. Needs 2 cores, taskset and wrk.
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { cpuSeconds, fail, fmt, median, onFail } from "./targets";

const LUA_DIR = join(import.meta.dir, "lua");
/** The scenario's ids start past this (bench/lua/common.lua), the warm-up's past 1,000,000. */
const ID_BASE = 5_000_000;
/** Plants made per second of a delete run: more than it deletes. */
const DELETE_ROOM = 40_000;
const UPDATE_PLANTS = 2_000;
const USAGE =
  "usage: bun bench/paired.ts <dirA> <dirB> [--scenario read|write|mix|delete|update] [--rounds N] [--seconds S] [--env-a K=V,…] [--env-b K=V,…]";

function options() {
  const args = process.argv.slice(2);
  const value = (name: string) => {
    const at = args.indexOf(name);
    return at < 0 ? undefined : (args.splice(at, 2)[1] ?? fail(USAGE));
  };
  const env = (text = "") =>
    Object.fromEntries(
      text
        .split(",")
        .filter(Boolean)
        .map((pair) => pair.split("=", 2)),
    );
  const scenario = value("--scenario") ?? "read";
  const rounds = Number(value("--rounds") ?? 6);
  const seconds = Number(value("--seconds") ?? 5);
  const envs = [env(value("--env-a")), env(value("--env-b"))];
  const [a, b] = args;
  if (!a || !b || !["read", "write", "mix", "delete", "update"].includes(scenario) || !(rounds > 0) || !(seconds > 0))
    fail(USAGE);
  return { dirs: [resolve(a), resolve(b)], envs, scenario, rounds, seconds };
}

const seededFor = (scenario: string, seconds: number) =>
  scenario === "delete" ? DELETE_ROOM * seconds : scenario === "update" ? UPDATE_PLANTS : 0;

async function run(command: string[], cwd: string, env: Record<string, string>) {
  const proc = Bun.spawn(command, { cwd, env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) fail(`${command.join(" ")} failed: ${err.trim()}`);
  return out;
}

/** One side: its store, tokens and server on core 0, answering. */
async function start(dir: string, env: Record<string, string>, store: string, seeded: number) {
  const database = { DATABASE_URL: store };
  const token = async (user: string) =>
    (await run(["bun", "src/cli.ts", "token", "create", "--user", user], dir, database)).trim().split("\n").at(-1);
  const tokens = [await token("bench-a"), await token("bench-b")] as string[];
  if (seeded > 0) {
    // wrk's one thread is user bench-a's; it deletes or updates ID_BASE + 1 on.
    const sqlite = new Database(store);
    const insert = sqlite.prepare(
      "INSERT INTO plants (owner_id, id, name, tag) SELECT id, ?1, 'Plant ' || ?1, 'bench' FROM users WHERE name = 'bench-a'",
    );
    sqlite.transaction(() => {
      for (let id = ID_BASE + 1; id <= ID_BASE + seeded; id++) insert.run(id);
    })();
    sqlite.close();
  }
  // Below Linux's ephemeral range (32768 on), where wrk's own sockets could hold the port.
  const port = 10_000 + Math.floor(Math.random() * 20_000);
  const server = Bun.spawn(["taskset", "-c", "0", "bun", "src/index.ts"], {
    cwd: dir,
    env: { ...process.env, ...database, PORT: String(port), HOST: "127.0.0.1", RATE_LIMIT_PER_MINUTE: "0", ...env },
    stdout: "ignore",
    stderr: "inherit",
  });
  onFail(() => server.kill("SIGKILL"));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if ((await fetch(`${url}/healthz`).catch(() => undefined))?.ok) break;
    if (i > 200 || server.exitCode !== null) fail(`${dir}: the server did not answer`);
    await Bun.sleep(50);
  }
  const wrkEnv: Record<string, string> = { BENCH_DELETE_COUNT: String(seeded) };
  if (scenario === "update") {
    const lines: string[] = [];
    for (let id = ID_BASE + 1; id <= ID_BASE + seeded; id += 64) {
      const ids = Array.from({ length: Math.min(64, ID_BASE + seeded + 1 - id) }, (_, i) => id + i);
      const headers = { authorization: `Bearer ${tokens[0]}` };
      const tags = await Promise.all(
        ids.map(async (at) => (await fetch(`${url}/plants/${at}`, { headers })).headers.get("etag")),
      );
      for (const [i, tag] of tags.entries())
        lines.push(`0 ${ids[i]} ${tag ?? fail("a plant came back without an ETag")}`);
    }
    wrkEnv.BENCH_ETAGS = `${store}.etags`;
    await Bun.write(wrkEnv.BENCH_ETAGS, `${lines.join("\n")}\n`);
  }
  return { server, url, tokens, wrkEnv };
}

/** Requests answered in a wrk run on core 1. */
async function load(
  { url, tokens, wrkEnv }: { url: string; tokens: string[]; wrkEnv: Record<string, string> },
  script: string,
  seconds: number,
  idBase: number,
) {
  const out = await run(
    ["taskset", "-c", "1", "wrk", "-t1", "-c64", `-d${seconds}s`, "-s", join(LUA_DIR, `${script}.lua`), url, "--"]
      .concat(tokens)
      .concat(String(idBase)),
    LUA_DIR,
    { BENCH_LUA_DIR: LUA_DIR, ...wrkEnv },
  );
  const answered = Number(/(\d+) requests in/.exec(out)?.[1] ?? fail(`wrk printed no count: ${out}`));
  const refused = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  // The mix's deletes may miss (bench/lua/mix.lua); a delete or update run's may not.
  if (["delete", "update"].includes(script) && refused > answered / 100)
    fail(`${url}: ${refused} of ${answered} ${script} requests were not 2xx`);
  return answered;
}

const { dirs, envs, scenario, rounds, seconds } = options();
const ratios: number[] = [];
const perSide: number[][] = [[], []];

for (let round = 1; round <= rounds; round++) {
  const folder = mkdtempSync(join(tmpdir(), "plant-store-paired-"));
  const sides = [];
  for (const [i, dir] of dirs.entries())
    sides.push(await start(dir, envs[i] ?? {}, join(folder, `${i}.sqlite`), seededFor(scenario, seconds)));
  try {
    await Promise.all(sides.map((side) => load(side, "write", 1, 1_000_000)));
    const before = sides.map((side) => cpuSeconds(side.server.pid) ?? fail("a server exited"));
    const answered = await Promise.all(sides.map((side) => load(side, scenario, seconds, ID_BASE)));
    const cpu = sides.map(
      (side, i) => (cpuSeconds(side.server.pid) ?? fail("a server exited")) - (before[i] as number),
    );
    const us = cpu.map((seconds, i) => (seconds * 1e6) / (answered[i] as number));
    perSide[0]?.push(us[0] as number);
    perSide[1]?.push(us[1] as number);
    ratios.push((us[1] as number) / (us[0] as number));
    console.log(
      `round ${round}: A ${fmt(us[0] as number, 1)} µs, B ${fmt(us[1] as number, 1)} µs per request, B/A ${fmt(ratios.at(-1) as number, 3)}`,
    );
  } finally {
    for (const side of sides) side.server.kill("SIGTERM");
    await Promise.all(sides.map((side) => side.server.exited));
    rmSync(folder, { recursive: true, force: true });
  }
}
const range = (values: number[]) => `${fmt(Math.min(...values), 3)}–${fmt(Math.max(...values), 3)}`;
console.log(
  `${scenario}, ${rounds} paired rounds of ${seconds} s: server CPU µs per request A ${fmt(median(perSide[0] ?? []), 1)}, B ${fmt(median(perSide[1] ?? []), 1)}; B/A ${fmt(median(ratios), 3)} (${range(ratios)})`,
);
