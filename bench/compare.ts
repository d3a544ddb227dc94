/**
 * Before/after: two checkouts of the service on the same machine and load, in alternating rounds.
 *
 *   bun bench/compare.ts <dirA> <dirB> [--engine sqlite|postgres] [--rounds N] [--seconds S]
 *                        [--tokens N] [--launches N] [--rate-limit N] [--scenarios <comma list>]
 *
 * Each side runs as an operator runs it: `bun run start` in its own checkout (its own
 * package.json's start script), with its own defaults: durable writes, the access log at the
 * default level, the default per-token rate limit. The servers get DATABASE_URL, HOST and PORT
 * and no other setting (the environment is cut down to PATH, HOME and the like, so a
 * LOG_LEVEL or RATE_LIMIT_PER_MINUTE in the caller's shell does not leak in).
 *
 * Each side gets a fresh store (a SQLite file in a temp folder, or a database of its own on one
 * throwaway PostgreSQL cluster with fsync on, as bench/postgres.ts), tokens made by its own CLI
 * (`bun run cli token create --user bench-a`), 2,000 plants seeded as bun run bench does, the
 * behaviour checks (bench/checks.ts) and a 1 s warm-up, all with one token per user. Then the
 * scenarios (bench/lua/) run in rounds, A then B in odd rounds and B then A in even ones, each
 * scenario back to back on both sides, so both see much the same background load.
 *
 * The scenarios: --scenarios, a comma list in the order to run them, read,write,mix by default.
 *   read    GET /plants?limit=20                      write   POST /plants (a new id each)
 *   mix     80 % list, 15 % create, 5 % delete of a plant created earlier in the run
 *   update  PATCH /plants/{id} with If-Match over the 2,000 seeded plants in turn, as bench/update.ts
 *           (bench/lua/update.lua): before every update run, outside its timed part, the side's
 *           own server is asked every seeded plant's ETag (GET /plants/{id}), so every PATCH
 *           carries a current tag
 *   delete  DELETE /plants/{id} (bench/lua/delete.lua), each request deleting a plant that exists,
 *           each id once: every wrk thread walks a range of its user's plants made for that run.
 *           The ranges, one per round and thread, the same ids on both sides, are made before the
 *           sides' servers start, by a server of each checkout on its store with the rate limit
 *           off (RATE_LIMIT_PER_MINUTE=0; setup only, it is stopped before the measured server
 *           starts), over HTTP, 64 requests at a time. Their size: a 2 s delete run on each such
 *           server (after a 1 s one) over a range of its own gives the rate, and every range holds
 *           DELETE_MARGIN x the faster side's rate x --seconds / 2 ids. A thread that walks past
 *           its range's end deletes ids never made, whose 404s the table flags. The ranges stay in
 *           the stores through the other scenarios (so with delete chosen every scenario runs on a
 *           store that much larger, on both sides alike). A delete run is not repeated (below):
 *           its plants are gone.
 *
 * The rate limit: the default is a budget per token (6000 a minute at 3996a32, with bursts of a
 * minute's worth), far below what wrk asks; with the bench's two tokens wrk gets 429 for about
 * nine requests in ten and the figures say nothing. So every wrk thread spreads its requests
 * over many fresh tokens of its user (bench/lua/many-tokens.lua runs the unchanged scenario
 * scripts with the Authorization header turning over), and every run's share of non-2xx answers
 * is printed. How many tokens: --tokens N per user, else enough for the faster side's warm-up
 * rate (429s included, so rather too many; for the delete runs, its probe's rate if higher, as
 * deletes outrun that warm-up) over the whole load phase, half again. Each CLI call
 * is a Bun start-up (0.3 s of CPU on an idle machine, several seconds on a busy one), so they
 * are not made by the hundred when a dozen will do. A run refused over 1 % anyway (the machine
 * got faster than the warm-up) is repeated at once with fresh tokens sized from its own rate, up
 * to twice; past that the table is flagged. --rate-limit N sets RATE_LIMIT_PER_MINUTE=N on both
 * sides instead of the default, and the table's header says so.
 *
 * Peak RSS is the server process's kernel high-water mark (VmHWM; not bun run's), reset at the
 * start of every round (/proc/<pid>/clear_refs), so each round gives one figure; the whole
 * run's peak is also shown. Cold start is the time from spawning `bun run start` to the first
 * 200 to an authenticated GET /plants?limit=1, over --launches launches per side, alternating,
 * on the store the load left behind.
 *
 * Server CPU per request is the serving process's user and system time over a run (all its
 * threads, from /proc/<pid>/stat) divided by the requests it answered: on a shared machine it
 * moves much less than req/s, since time spent waiting for a core is not counted.
 *
 * Every figure is the median over rounds (or launches) with the min–max; B/A is the median of
 * the per-round ratios (each round pairs A and B run back to back), with their min–max.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { type Cluster, createDatabase, startCluster } from "../scripts/pg-cluster";
import { runBehaviourChecks } from "./checks";
import { CONNECTIONS, ENGINE } from "./options";
import { type LoadScenario, type LoadTokens, SCENARIOS, SEED_PER_USER, spreadLoad } from "./rounds";
import { cpuSeconds, fail, fmt, median, memoryKiB, onFail, seedOverHttp } from "./targets";
import { currentETags } from "./update";
import type { WrkResult } from "./wrk";

const USAGE =
  "usage: bun bench/compare.ts <dirA> <dirB> [--engine sqlite|postgres] [--rounds N] [--seconds S] [--tokens N] [--launches N] [--rate-limit N] [--scenarios read,write,mix,update,delete]";

/** Past this share of non-2xx answers in any run, the table is flagged: the load was not what it claims. */
const NON_2XX_WARN = 0.01;
/** Fresh load tokens per user at most, at the start or when a run is repeated. */
const MAX_TOKENS_PER_USER = 100;
/** Repeats of a run refused over NON_2XX_WARN, each with fresh tokens, before its figures are kept as they are. */
const MAX_REPEATS = 2;
/** CLI processes at once while making tokens (each is a Bun start-up and a commit). */
const CLI_CONCURRENCY = 4;

/** What --scenarios may name; the first three are bench/rounds.ts's, and the default. */
const ALL_SCENARIOS = [...SCENARIOS, "update", "delete"] as const satisfies readonly LoadScenario[];
type CompareScenario = (typeof ALL_SCENARIOS)[number];
/** Ids of the delete scenario's ranges: round r's start at DELETE_BASE + r * 10^9 (round 0: the probe's warm-up and the probe). */
const DELETE_BASE = 10_000_000_000_000;
/** A delete range holds this many times the ids the faster side's probe rate would delete in a run. */
const DELETE_MARGIN = 1.6;
/** Seconds of the probe run that sizes the delete ranges (after a 1 s delete warm-up), and each one's range per wrk thread. */
const DELETE_PROBE_SECONDS = 2;
const DELETE_PROBE_IDS = 30_000;
/** Creates in flight while making the delete ranges. */
const SEED_CONCURRENCY = 64;

interface Options {
  dirs: [string, string];
  rounds: number;
  seconds: number;
  /** Load tokens per user (each side has two users, bench-a and bench-b, one per wrk thread); undefined: sized from the warm-up. */
  tokens: number | undefined;
  launches: number;
  /** RATE_LIMIT_PER_MINUTE for both sides, or undefined for each side's default. */
  rateLimit: number | undefined;
  /** What runs in every round, in this order. */
  scenarios: CompareScenario[];
}

function usage(message: string): never {
  console.error(`compare: ${message}\n${USAGE}`);
  process.exit(2);
}

function parseOptions(argv: string[]): Options {
  const dirs: string[] = [];
  const numbers: Record<string, number> = { rounds: 3, seconds: 8, launches: 5 };
  let rateLimit: number | undefined;
  let tokens: number | undefined;
  let scenarios: CompareScenario[] = [...SCENARIOS];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] as string;
    if (!word.startsWith("--")) {
      dirs.push(word);
      continue;
    }
    const name = word.slice(2);
    const value = argv[++i];
    if (value === undefined) usage(`${word} needs a value`);
    if (name === "engine") continue; // bench/options.ts reads it (and rejects an unknown engine)
    if (name === "scenarios") {
      const names = value.split(",").map((part) => part.trim());
      const unknown = names.filter((part) => !(ALL_SCENARIOS as readonly string[]).includes(part));
      if (unknown.length > 0 || names.length === 0)
        usage(`--scenarios takes a comma list of ${ALL_SCENARIOS.join(", ")}, not "${value}"`);
      scenarios = [...new Set(names as CompareScenario[])];
      continue;
    }
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) usage(`${word} must be a positive integer, not "${value}"`);
    if (name === "rate-limit") rateLimit = n;
    else if (name === "tokens") tokens = n;
    else if (name in numbers) numbers[name] = n;
    else usage(`unknown option ${word}`);
  }
  if (dirs.length !== 2) usage("give two checkouts, A (before) and B (after)");
  const [a, b] = dirs.map((dir) => resolve(dir)) as [string, string];
  for (const dir of [a, b]) {
    const manifest = join(dir, "package.json");
    if (!existsSync(manifest)) usage(`${dir} has no package.json`);
    const scripts = JSON.parse(readFileSync(manifest, "utf8")).scripts ?? {};
    if (typeof scripts.start !== "string") usage(`${dir}/package.json has no start script`);
    if (typeof scripts.cli !== "string") usage(`${dir}/package.json has no cli script`);
  }
  return {
    dirs: [a, b],
    rounds: numbers.rounds as number,
    seconds: numbers.seconds as number,
    tokens,
    launches: numbers.launches as number,
    rateLimit,
    scenarios,
  };
}

const options = parseOptions(process.argv.slice(2));

const shellWord = (word: string) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);
const commandLine = ["bun", relative(process.cwd(), process.argv[1] as string), ...process.argv.slice(2)]
  .map(shellWord)
  .join(" ");

// ---------------------------------------------------------------------------------------------
// Processes

/** What the CLI and the servers inherit: enough to run Bun, none of the service's settings. */
function baseEnv(): Record<string, string> {
  const keep = /^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LC_\w+|TZ|TMPDIR|BUN_INSTALL|XDG_\w+)$/;
  return Object.fromEntries(
    Object.entries(process.env).filter((entry): entry is [string, string] => keep.test(entry[0]) && !!entry[1]),
  );
}

interface Side {
  label: "A" | "B";
  dir: string;
  /** The checkout's commit, and whether it has uncommitted changes. */
  version: string;
  /** RATE_LIMIT_PER_MINUTE's default as its sources give it (best effort: the header, the token count). */
  defaultRateLimit: number | undefined;
  database: string;
  logDir: string;
  /** One token per user for seeding, the behaviour checks, the warm-up and the cold starts. */
  setupTokens: [string, string];
  /** The load's tokens, per user: wrk's first thread turns over `a`, its second over `b`. */
  tokens: { a: string[]; b: string[] };
  /** The warm-up's req/s (429s included), from which the load's tokens are counted. */
  warmRps: number;
  server: Server | undefined;
  /** The server process's command line (what its start script runs). */
  serverCommand: string;
  checkFailures: string[];
  results: Record<CompareScenario, WrkResult[]>;
  /** The server process's CPU time (all its threads) per request answered, in µs, per run. */
  cpuPerRequest: Record<CompareScenario, number[]>;
  /** VmHWM in KiB: after seeding and warm-up, then within each round. */
  rssSetup: number;
  rssRounds: number[];
  coldMs: number[];
}

interface Server {
  proc: Bun.Subprocess;
  url: string;
  spawnedAt: number;
  exited: boolean;
  /** The process serving HTTP: bun run's child, found once it answers. */
  pid: number;
  /** Its output files: <logPrefix>.out.log and <logPrefix>.err.log. */
  logPrefix: string;
}

/** Groups started and not yet gone: a failing run must not leave servers behind. */
const liveGroups = new Set<number>();

function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

/** Runs `bun run cli <args>` in the side's checkout on its store; answers the last line of stdout. */
async function runCli(side: Side, args: string[]): Promise<string> {
  const proc = Bun.spawn(["bun", "run", "cli", ...args], {
    cwd: side.dir,
    env: { ...baseEnv(), DATABASE_URL: side.database },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  const last = stdout.trim().split("\n").at(-1)?.trim() ?? "";
  if (code !== 0 || last === "") fail(`${side.label}: bun run cli ${args.join(" ")} failed: ${stderr.trim()}`);
  return last;
}

const createToken = (side: Side, user: string) => runCli(side, ["token", "create", "--user", user]);

/** `count` load tokens for each of bench-a and bench-b, CLI_CONCURRENCY CLI processes at once. */
async function createLoadTokens(side: Side, count: number): Promise<void> {
  const queue = [...Array(count).fill("bench-a"), ...Array(count).fill("bench-b")] as string[];
  const worker = async () => {
    for (let user = queue.shift(); user !== undefined; user = queue.shift()) {
      const token = await createToken(side, user);
      (user === "bench-a" ? side.tokens.a : side.tokens.b).push(token);
    }
  };
  await Promise.all(Array.from({ length: CLI_CONCURRENCY }, worker));
  const all = [...side.setupTokens, ...side.tokens.a, ...side.tokens.b];
  if (new Set(all).size !== all.length) fail(`${side.label}: the CLI gave the same token twice`);
}

let launches = 0;

/**
 * `bun run start` in the side's checkout, in a process group of its own, its output to files;
 * `extraEnv` only for setup (the delete ranges' server).
 */
function spawnServer(side: Side, extraEnv: Record<string, string> = {}): Server {
  const port = freePort();
  const n = ++launches;
  const env: Record<string, string> = {
    ...baseEnv(),
    DATABASE_URL: side.database,
    HOST: "127.0.0.1",
    PORT: String(port),
  };
  if (options.rateLimit !== undefined) env.RATE_LIMIT_PER_MINUTE = String(options.rateLimit);
  Object.assign(env, extraEnv);
  const logPrefix = join(side.logDir, `server-${n}`);
  const spawnedAt = performance.now();
  const server: Server = {
    proc: undefined as unknown as Bun.Subprocess,
    url: `http://127.0.0.1:${port}`,
    spawnedAt,
    exited: false,
    pid: 0,
    logPrefix,
  };
  server.proc = Bun.spawn(["bun", "run", "start"], {
    cwd: side.dir,
    env,
    stdin: "ignore",
    stdout: Bun.file(`${logPrefix}.out.log`),
    stderr: Bun.file(`${logPrefix}.err.log`),
    detached: true,
    onExit: () => {
      server.exited = true;
    },
  });
  server.pid = server.proc.pid;
  liveGroups.add(server.proc.pid);
  return server;
}

/** The last lines of a server's output, for a failure's message. */
function logTail(server: Server): string {
  return ["out", "err"]
    .map((stream) => `${server.logPrefix}.${stream}.log`)
    .filter((path) => existsSync(path))
    .map((path) => readFileSync(path, "utf8").trim().split("\n").slice(-5).join("\n"))
    .join("\n");
}

/** Polls `path` until it answers 200; answers the ms since the spawn. */
async function firstOk(side: Side, server: Server, path: string, token?: string): Promise<number> {
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const deadline = server.spawnedAt + 120_000;
  for (;;) {
    try {
      const response = await fetch(`${server.url}${path}`, { headers, signal: AbortSignal.timeout(5_000) });
      await response.arrayBuffer();
      if (response.status === 200) return performance.now() - server.spawnedAt;
    } catch {
      // Not listening yet.
    }
    if (server.exited) fail(`${side.label}: the server exited before answering ${path}:\n${logTail(server)}`);
    if (performance.now() > deadline) fail(`${side.label}: no 200 to ${path} within 120 s:\n${logTail(server)}`);
    await Bun.sleep(2);
  }
}

/** Every process below `pid`, from /proc's children lists. */
function descendants(pid: number): number[] {
  const found: number[] = [];
  const stack = [pid];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${next}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      let children = "";
      try {
        children = readFileSync(`/proc/${next}/task/${task}/children`, "utf8");
      } catch {
        // Gone meanwhile.
      }
      for (const child of children.trim().split(/\s+/).filter(Boolean).map(Number)) {
        found.push(child);
        stack.push(child);
      }
    }
  }
  return found;
}

/** The server: the process below bun run holding the most memory (bun run itself if it has no child). */
async function serverPid(root: number): Promise<number> {
  let best = root;
  let bestRss = -1;
  for (const pid of descendants(root)) {
    const rss = await memoryKiB(pid, "VmRSS").catch(() => Number.NaN);
    if (rss > bestRss) [best, bestRss] = [pid, rss];
  }
  return best;
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
  } catch {
    return "?";
  }
}

/** Starts the side's server and waits for /healthz to answer 200. */
async function startServer(side: Side, extraEnv: Record<string, string> = {}): Promise<Server> {
  const server = spawnServer(side, extraEnv);
  await firstOk(side, server, "/healthz");
  server.pid = await serverPid(server.proc.pid);
  side.serverCommand = commandOf(server.pid);
  return server;
}

/** SIGTERM to the whole group (bun run and the server, as a terminal's Ctrl-C), then waits until it is empty. */
async function stopServer(server: Server): Promise<void> {
  const pgid = server.proc.pid;
  signalGroup(pgid, "SIGTERM");
  await server.proc.exited;
  const deadline = performance.now() + 15_000;
  while (signalGroup(pgid, 0)) {
    if (performance.now() > deadline) signalGroup(pgid, "SIGKILL");
    await Bun.sleep(5);
  }
  liveGroups.delete(pgid);
}

/** Resets the kernel's peak-RSS mark to the current RSS (Linux 4.0+); false if it cannot. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// The run

function versionOf(dir: string): string {
  const git = (...args: string[]) => Bun.spawnSync(["git", "-C", dir, ...args], { stderr: "ignore" });
  const head = git("rev-parse", "--short", "HEAD");
  if (!head.success) return "not a git checkout";
  const dirty = git("status", "--porcelain", "--untracked-files=no").stdout.toString().trim() !== "";
  return `${head.stdout.toString().trim()}${dirty ? " + uncommitted changes" : ""}`;
}

/** RATE_LIMIT_PER_MINUTE's default in the checkout's sources, if one line says it plainly. */
function defaultRateLimitOf(dir: string): number | undefined {
  const found = Bun.spawnSync(["grep", "-rhoE", "--include=*.ts", `"RATE_LIMIT_PER_MINUTE",\\s*[0-9_]+`, "src"], {
    cwd: dir,
    stderr: "ignore",
  });
  const values = new Set(
    [...found.stdout.toString().matchAll(/,\s*([0-9_]+)/g)].map((match) => (match[1] as string).replaceAll("_", "")),
  );
  return values.size === 1 ? Number([...values][0]) : undefined;
}

const cpuSecondsOf = (pid: number) => cpuSeconds(pid) ?? Number.NaN;

const share = (result: WrkResult, seconds: number) =>
  result.rps > 0 ? Math.min(1, (result.non2xx + result.errors) / (result.rps * seconds)) : 1;
const percent = (value: number) => `${fmt(100 * value, 1)} %`;

/** One wrk run of `scenario` at `url`, each thread turning over its user's tokens in `tokens`; `env` from runEnv. */
function load(
  url: string,
  scenario: CompareScenario,
  seconds: number,
  idBase: number,
  tokens: LoadTokens,
  env: Record<string, string> = {},
): Promise<WrkResult> {
  if (tokens.a.length === 0 || tokens.a.length !== tokens.b.length) fail(`no load tokens for ${url}`);
  // many-tokens.lua loads the scenario that BENCH_SCENARIO names (spreadLoad sets it).
  return spreadLoad(url, scenario, tokens, idBase, { seconds, env });
}

/** The size of every delete range per wrk thread, and the faster side's probe rate (makeDeleteRanges sets them). */
let deleteCount = 0;
let deleteProbeRps = 0;
const deleteBase = (round: number) => DELETE_BASE + round * 1_000_000_000;

/**
 * What a run on the side's server needs first, outside its timed part: for update, every seeded
 * plant's current ETag in a file (bench/update.ts reads them; the side's own, over its load
 * tokens); for delete, its ranges' size.
 */
async function runEnv(side: Side, scenario: CompareScenario): Promise<Record<string, string>> {
  if (side.server === undefined) fail(`${side.label}: no server`);
  if (scenario === "update") {
    const file = join(side.logDir, "etags.txt");
    writeFileSync(file, await currentETags(side.server.url, side.tokens));
    return { BENCH_ETAGS: file };
  }
  if (scenario === "delete") return { BENCH_DELETE_COUNT: String(deleteCount) };
  return {};
}

/** A delete run's ranges on a side: wrk thread t deletes its user's ids base + t * 10^8 + 1 .. + count. */
const deleteRanges = (side: Side, base: number, count: number) =>
  [0, 1].map((thread) => ({
    token: side.setupTokens[thread % 2] as string,
    first: base + thread * 100_000_000 + 1,
    count,
  }));

/** Creates every range's plants (the token's user's) over HTTP, SEED_CONCURRENCY requests at a time. */
async function createRanges(
  label: string,
  url: string,
  ranges: { token: string; first: number; count: number }[],
): Promise<number> {
  let at = 0;
  let offset = 0;
  const next = (): { token: string; id: number } | undefined => {
    while (at < ranges.length && offset >= (ranges[at]?.count ?? 0)) [at, offset] = [at + 1, 0];
    const range = ranges[at];
    return range === undefined ? undefined : { token: range.token, id: range.first + offset++ };
  };
  let made = 0;
  const worker = async () => {
    for (let item = next(); item !== undefined; item = next()) {
      const answer = await fetch(`${url}/plants`, {
        method: "POST",
        headers: { authorization: `Bearer ${item.token}`, "content-type": "application/json" },
        body: `{"id":${item.id},"name":"Delete ${item.id}","tag":"bench"}`,
      });
      await answer.arrayBuffer();
      if (answer.status !== 200)
        fail(`${label}: creating plant ${item.id} for the delete scenario answered ${answer.status}`);
      made++;
    }
  };
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker));
  return made;
}

/**
 * The delete scenario's plants, before the measured servers start: on each side a server with
 * the rate limit off (setup only), a 1 s delete warm-up and a DELETE_PROBE_SECONDS probe run, each
 * over ranges of its own (the probe's rate), then, sized from the faster side's rate, a range per
 * round and wrk thread. Answers a line for the table's header.
 */
async function makeDeleteRanges(sides: [Side, Side]): Promise<string> {
  const began = performance.now();
  const servers: Server[] = [];
  const probes: number[] = [];
  for (const side of sides) {
    const server = await startServer(side, { RATE_LIMIT_PER_MINUTE: "0" });
    servers.push(server);
    const [warmBase, probeBase] = [deleteBase(0), deleteBase(0) + 500_000_000];
    for (const base of [warmBase, probeBase]) {
      await createRanges(side.label, server.url, deleteRanges(side, base, DELETE_PROBE_IDS));
    }
    const [a, b] = side.setupTokens;
    const env = { BENCH_DELETE_COUNT: String(DELETE_PROBE_IDS) };
    await load(server.url, "delete", 1, warmBase, { a: [a], b: [b] }, env);
    const probe = await load(server.url, "delete", DELETE_PROBE_SECONDS, probeBase, { a: [a], b: [b] }, env);
    probes.push(probe.rps);
    console.log(
      `${side.label}: delete probe ${fmt(probe.rps)} req/s over ${DELETE_PROBE_SECONDS} s (rate limit off), non-2xx ${probe.non2xx}`,
    );
  }
  const fastest = Math.max(...probes);
  deleteProbeRps = fastest;
  deleteCount = Math.ceil((DELETE_MARGIN * fastest * options.seconds) / 2 / 1000) * 1000;
  const seedBegan = performance.now();
  let made = 0;
  for (const [i, side] of sides.entries()) {
    const server = servers[i] as Server;
    for (let round = 1; round <= options.rounds; round++) {
      made += await createRanges(side.label, server.url, deleteRanges(side, deleteBase(round), deleteCount));
    }
    await stopServer(server);
  }
  const seconds = (performance.now() - seedBegan) / 1000;
  const note = `delete: each wrk thread walks ${fmt(deleteCount)} plants of its user made for the run (${DELETE_MARGIN} x the faster side's probe, ${fmt(fastest)} req/s, over ${options.seconds} s, halved), ${fmt(made / 2)} per side before the rounds by its checkout's server with RATE_LIMIT_PER_MINUTE=0 (setup only), ${fmt(made / seconds)} creates/s; setup ${fmt((performance.now() - began) / 1000, 0)} s`;
  console.log(note);
  return note;
}

/** A token per user (the first alone: it may make the schema). */
async function setupTokens(side: Side): Promise<void> {
  const a = await createToken(side, "bench-a");
  const b = await createToken(side, "bench-b");
  side.setupTokens = [a, b];
}

/** The server, the seed, the checks, a 1 s warm-up. */
async function prepare(side: Side): Promise<void> {
  const began = performance.now();
  const [a, b] = side.setupTokens;
  side.server = await startServer(side);
  await seedOverHttp(side.server.url, a, SEED_PER_USER);
  await seedOverHttp(side.server.url, b, SEED_PER_USER);
  side.checkFailures = await runBehaviourChecks(side.server.url, a, b);
  const warm = await load(side.server.url, "read", 1, 500_000_000, { a: [a], b: [b] });
  side.warmRps = warm.rps;
  console.log(
    `${side.label}: ready in ${fmt((performance.now() - began) / 1000, 1)} s; server pid ${side.server.pid} (${side.serverCommand}); ${2 * SEED_PER_USER} plants seeded; behaviour checks ${side.checkFailures.length === 0 ? "pass" : `FAIL (${side.checkFailures.length})`}; warm-up ${fmt(warm.rps)} req/s, non-2xx ${percent(share(warm, 1))}`,
  );
  for (const failure of side.checkFailures) console.log(`  ${side.label} check: ${failure}`);
}

/** The per-token limit the load meets: --rate-limit, else the lower of the sides' defaults, else 3996a32's. */
function perMinuteLimit(sides: Side[]): { perMinute: number; known: boolean } {
  if (options.rateLimit !== undefined) return { perMinute: options.rateLimit, known: true };
  const found = sides.map((side) => side.defaultRateLimit).filter((n): n is number => n !== undefined);
  return found.length === sides.length
    ? { perMinute: Math.min(...found), known: true }
    : { perMinute: 6000, known: false };
}

/**
 * Fresh load tokens per user for a side's next `runs` runs at `rps`: a token starts with a
 * minute's budget and gains perMinute / 60 a second, so while both sides run (2 * runs runs) it
 * can take perMinute * (1 + 2 * runs * seconds / 60) requests; half again is asked for, as the
 * load may run faster than the rate it was sized from.
 */
function tokensPerUser(rps: number, runs: number, perMinute: number): number {
  const demand = 1.5 * rps * runs * options.seconds;
  const perToken = perMinute * (1 + (2 * runs * options.seconds) / 60);
  return Math.min(MAX_TOKENS_PER_USER, Math.max(2, Math.ceil(demand / perToken / 2)));
}

function range(values: number[], digits: number): string {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return "-";
  const [low, high] = [Math.min(...finite), Math.max(...finite)];
  return `${fmt(median(finite), digits)} (${fmt(low, digits)}–${fmt(high, digits)})`;
}

function ratios(b: number[], a: number[]): string {
  const paired = b.map((value, i) => value / (a[i] as number)).filter(Number.isFinite);
  return paired.length === 0 ? "-" : range(paired, 2);
}

/** The 1-minute load average against the cores: other work on the machine skews both sides' figures. */
const loadNote = () => `${fmt(loadavg()[0] as number, 1)} on ${availableParallelism()} cores`;

function report(
  sides: [Side, Side],
  timing: { total: number; setup: number; load: number; repeats: number; cold: number },
  loadAtStart: string,
  tokenNotes: string[],
  deleteNote: string | undefined,
  mostWalked: number,
) {
  const [A, B] = sides;
  const rateLimit =
    options.rateLimit === undefined
      ? `each side's default (RATE_LIMIT_PER_MINUTE unset; its sources say A ${A.defaultRateLimit ?? "?"}, B ${B.defaultRateLimit ?? "?"} a minute per token)`
      : `RATE_LIMIT_PER_MINUTE=${options.rateLimit} on both sides (set by --rate-limit, NOT the default)`;
  const rows: string[][] = [];
  for (const scenario of options.scenarios) {
    const [ra, rb] = [A.results[scenario], B.results[scenario]];
    rows.push([
      `${scenario} req/s`,
      range(
        ra.map((r) => r.rps),
        0,
      ),
      range(
        rb.map((r) => r.rps),
        0,
      ),
      ratios(
        rb.map((r) => r.rps),
        ra.map((r) => r.rps),
      ),
    ]);
    rows.push([
      `${scenario} p99 ms`,
      range(
        ra.map((r) => r.p99),
        2,
      ),
      range(
        rb.map((r) => r.p99),
        2,
      ),
      ratios(
        rb.map((r) => r.p99),
        ra.map((r) => r.p99),
      ),
    ]);
    const [ca, cb] = [A.cpuPerRequest[scenario], B.cpuPerRequest[scenario]];
    rows.push([`${scenario} server CPU µs per request`, range(ca, 1), range(cb, 1), ratios(cb, ca)]);
    const worst = (results: WrkResult[]) => percent(Math.max(...results.map((r) => share(r, options.seconds))));
    rows.push([`${scenario} non-2xx + socket errors, worst run`, worst(ra), worst(rb), ""]);
  }
  const mib = (kib: number[]) => kib.map((value) => value / 1024);
  rows.push([
    "peak RSS MiB, per round",
    range(mib(A.rssRounds), 1),
    range(mib(B.rssRounds), 1),
    ratios(B.rssRounds, A.rssRounds),
  ]);
  const wholeRun = (side: Side) => Math.max(side.rssSetup, ...side.rssRounds);
  rows.push([
    "peak RSS MiB, whole run",
    fmt(wholeRun(A) / 1024, 1),
    fmt(wholeRun(B) / 1024, 1),
    fmt(wholeRun(B) / wholeRun(A), 2),
  ]);
  rows.push(["cold start ms", range(A.coldMs, 1), range(B.coldMs, 1), ratios(B.coldMs, A.coldMs)]);

  const worstShare = Math.max(
    ...sides.flatMap((side) => options.scenarios.flatMap((s) => side.results[s].map((r) => share(r, options.seconds)))),
  );
  const lines = [
    `$ ${commandLine}`,
    "",
    `Plant Store before/after on ${ENGINE}${ENGINE === "postgres" ? " (one throwaway cluster, fsync and synchronous_commit on, a database per side)" : " (a fresh SQLite file per side)"}`,
    `A: ${A.dir} (${A.version}); server: ${A.serverCommand}`,
    `B: ${B.dir} (${B.version}); server: ${B.serverCommand}`,
    `Each side: \`bun run start\` in its checkout with only DATABASE_URL, HOST=127.0.0.1 and PORT set: default durability, default logging (LOG_LEVEL unset, the access log on, to a file)`,
    `Rate limit: ${rateLimit}; ${tokenNotes[0]}; a run refused over ${percent(NON_2XX_WARN)} is repeated at once with fresh tokens (up to ${MAX_REPEATS} times), the repeat's figures kept${tokenNotes.length > 1 ? ":" : " (none was)"}`,
    ...tokenNotes.slice(1).map((note) => `  - ${note}`),
    `${options.rounds} alternating rounds (A first in odd rounds) of ${options.scenarios.join(", ")}, ${options.seconds} s per run, wrk -t2 -c${CONNECTIONS}, ${2 * SEED_PER_USER} plants seeded; cold start: ${options.launches} launches per side, alternating, spawn of bun run start to the first 200 to GET /plants?limit=1`,
    ...(options.scenarios.includes("update")
      ? [
          `update: PATCH /plants/{id} with If-Match over the ${2 * SEED_PER_USER} seeded plants in turn (bench/lua/update.lua); each side's ETags read from its own server before every update run, outside the timed part`,
        ]
      : []),
    ...(deleteNote === undefined ? [] : [`${deleteNote}; the busiest thread walked ${fmt(mostWalked)} at most`]),
    `Machine load average (1 min): ${loadAtStart} at the start, ${loadNote()} at the end (over the core count, other work skews the figures)`,
    "Cells: median (min–max) over rounds or launches; B/A: median (min–max) of the per-round (per-launch) ratios",
    "",
    "| metric | A | B | B/A |",
    "| --- | ---: | ---: | ---: |",
    ...rows.map((row) => `| ${row.join(" | ")} |`),
    "",
  ];
  if (worstShare > NON_2XX_WARN) {
    lines.push(
      `WARNING: a run got ${percent(worstShare)} non-2xx answers or socket errors (over ${percent(NON_2XX_WARN)}): its figures measure refusals, not the service. Rerun with more --tokens (or --rate-limit N, which the header then states).`,
    );
  }
  for (const side of sides) {
    if (side.checkFailures.length > 0) {
      lines.push(
        `WARNING: ${side.label} fails ${side.checkFailures.length} behaviour check(s) (listed above): the sides may not do the same work.`,
      );
    }
  }
  lines.push(
    `Wall time ${fmt(timing.total / 1000, 0)} s: setup (tokens, seeding, checks, warm-up${deleteNote === undefined ? "" : ", delete ranges"}) ${fmt(timing.setup / 1000, 0)} s, load ${fmt(timing.load / 1000, 0)} s (repeats and their tokens ${fmt(timing.repeats / 1000, 0)} s), cold starts ${fmt(timing.cold / 1000, 0)} s`,
  );
  console.log(`\n${lines.join("\n")}`);
}

async function main() {
  if (Bun.spawnSync(["which", "wrk"]).exitCode !== 0) fail("wrk is not installed (apt-get install -y wrk)");
  const began = performance.now();
  const loadAtStart = loadNote();
  console.log(`$ ${commandLine}`);
  console.log(`load average ${loadAtStart}`);
  const work = mkdtempSync(join(tmpdir(), "plant-store-compare-"));
  let cluster: Cluster | undefined;
  const guard = onFail(() => {
    for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
    cluster?.stopNow();
    rmSync(work, { recursive: true, force: true });
  });
  process.once("SIGINT", () => fail("interrupted"));
  try {
    if (ENGINE === "postgres") {
      try {
        cluster = await startCluster({ durable: true });
      } catch (error) {
        fail(`cannot start a PostgreSQL cluster: ${(error as Error).message}`);
      }
    }
    const sides = [] as unknown as [Side, Side];
    for (const [i, label] of (["A", "B"] as const).entries()) {
      const dir = options.dirs[i] as string;
      const logDir = join(work, label);
      mkdirSync(logDir);
      const database = cluster
        ? await createDatabase(cluster.url, `compare_${label.toLowerCase()}`)
        : join(logDir, "plant-store.sqlite");
      sides.push({
        label,
        dir,
        version: versionOf(dir),
        defaultRateLimit: defaultRateLimitOf(dir),
        database,
        logDir,
        setupTokens: ["", ""],
        tokens: { a: [], b: [] },
        warmRps: Number.NaN,
        server: undefined,
        serverCommand: "?",
        checkFailures: [],
        results: { read: [], write: [], mix: [], update: [], delete: [] },
        cpuPerRequest: { read: [], write: [], mix: [], update: [], delete: [] },
        rssSetup: Number.NaN,
        rssRounds: [],
        coldMs: [],
      });
    }
    for (const side of sides) await setupTokens(side);
    const deleteNote = options.scenarios.includes("delete") ? await makeDeleteRanges(sides) : undefined;
    for (const side of sides) await prepare(side);
    const limit = perMinuteLimit(sides);
    const runsPerSide = options.scenarios.length * options.rounds;
    // Deletes run faster than the read warm-up (mostly 429s) says: their runs count at their
    // probe's rate, if higher, the others at the warm-up's (sizingRps: the mean over the runs).
    const warmest = Math.max(...sides.map((side) => side.warmRps));
    const deleteRps = Math.max(warmest, deleteProbeRps);
    const sizingRps =
      options.scenarios.reduce((sum, s) => sum + (s === "delete" ? deleteRps : warmest), 0) / options.scenarios.length;
    const perUser = options.tokens ?? tokensPerUser(sizingRps, runsPerSide, limit.perMinute);
    const tokensBegan = performance.now();
    await Promise.all(sides.map((side) => createLoadTokens(side, perUser)));
    const tokenNotes = [
      `each wrk thread turns over ${perUser} tokens of its user, ${2 * perUser} per side (${
        options.tokens !== undefined
          ? "--tokens"
          : `sized for 1.5 x the faster warm-up's ${fmt(warmest)} req/s${deleteRps > warmest ? ` (the delete runs: the faster delete probe's ${fmt(deleteRps)})` : ""} at ${limit.perMinute}/min per token${limit.known ? "" : " (assumed: a side's default was not found)"}`
      }), made in ${fmt((performance.now() - tokensBegan) / 1000, 1)} s; seeding, checks, warm-up and cold starts use one more per user`,
    ];
    console.log(tokenNotes[0]);
    const setupDone = performance.now();
    let repeatMs = 0;

    const [A, B] = sides;
    const pidOf = (side: Side) => (side.server as Server).pid;
    for (const side of sides) side.rssSetup = await memoryKiB(pidOf(side), "VmHWM");
    let idBase = 1_000_000_000;
    let mostWalked = 0;
    for (let round = 1; round <= options.rounds; round++) {
      const order = round % 2 === 1 ? [A, B] : [B, A];
      for (const side of sides) {
        if (!resetPeak(pidOf(side)) && round === 1) {
          console.log(`${side.label}: cannot reset the peak RSS; every round's figure is the peak so far`);
        }
      }
      for (const [index, scenario] of options.scenarios.entries()) {
        for (const side of order) {
          const line = (result: WrkResult) =>
            console.log(
              `round ${round} ${scenario.padEnd(6)} ${side.label} ${fmt(result.rps).padStart(7)} req/s  p50 ${fmt(result.p50, 2)} ms  p99 ${fmt(result.p99, 2)} ms  non-2xx ${result.non2xx} (${percent(share(result, options.seconds))})  socket errors ${result.errors}${scenario === "delete" ? `  ids walked ${fmt(result.counts.most_walked ?? Number.NaN)} of ${fmt(deleteCount)} (busiest thread)` : ""}`,
            );
          // The run's setup (update's ETags) comes before the CPU reading: only the run is counted.
          const run = async () => {
            idBase += 1_000_000_000;
            const env = await runEnv(side, scenario);
            const cpuBefore = cpuSecondsOf(pidOf(side));
            const ids = scenario === "delete" ? deleteBase(round) : idBase;
            const result = await load((side.server as Server).url, scenario, options.seconds, ids, side.tokens, env);
            line(result);
            return { result, cpu: cpuSecondsOf(pidOf(side)) - cpuBefore };
          };
          let { result, cpu } = await run();
          // Refused over NON_2XX_WARN (the machine got faster than the tokens were sized for):
          // fresh tokens for the runs left at this run's rate (429s included: too many rather
          // than too few), and the run again, straight away, so it still pairs with the other
          // side's. Not a delete run: its plants are gone.
          if (scenario === "delete" && share(result, options.seconds) > NON_2XX_WARN) {
            const note = `${side.label}, round ${round} delete: ${percent(share(result, options.seconds))} non-2xx, not repeated (its plants are gone)${(result.counts.exhausted ?? 0) > 0 ? `; ${fmt(result.counts.exhausted ?? 0)} requests past the end of the ranges` : ""}`;
            console.log(note);
            tokenNotes.push(note);
          }
          for (
            let repeat = 1;
            repeat <= MAX_REPEATS && scenario !== "delete" && share(result, options.seconds) > NON_2XX_WARN;
            repeat++
          ) {
            const began = performance.now();
            const runsLeft = (options.rounds - round) * options.scenarios.length + options.scenarios.length - index;
            const fresh = tokensPerUser(result.rps, runsLeft, limit.perMinute);
            side.tokens = { a: [], b: [] };
            await createLoadTokens(side, fresh);
            const note = `${side.label}, round ${round} ${scenario}: ${percent(share(result, options.seconds))} non-2xx, so ${fresh} fresh tokens per user (made in ${fmt((performance.now() - began) / 1000, 1)} s) and the run repeated`;
            console.log(note);
            tokenNotes.push(note);
            ({ result, cpu } = await run());
            repeatMs += performance.now() - began;
          }
          if (scenario === "delete") mostWalked = Math.max(mostWalked, result.counts.most_walked ?? 0);
          side.results[scenario].push(result);
          const answered = result.rps * options.seconds;
          side.cpuPerRequest[scenario].push((1e6 * cpu) / answered);
        }
      }
      for (const side of sides) side.rssRounds.push(await memoryKiB(pidOf(side), "VmHWM"));
    }
    for (const side of sides) {
      await stopServer(side.server as Server);
      side.server = undefined;
    }
    const loadDone = performance.now();

    for (let launch = 0; launch < options.launches; launch++) {
      for (const side of launch % 2 === 0 ? [A, B] : [B, A]) {
        const server = spawnServer(side);
        side.coldMs.push(await firstOk(side, server, "/plants?limit=1", side.setupTokens[0]));
        await stopServer(server);
      }
    }
    console.log(
      `cold start ms: A ${A.coldMs.map((ms) => fmt(ms)).join(", ")}; B ${B.coldMs.map((ms) => fmt(ms)).join(", ")}`,
    );
    const end = performance.now();
    report(
      sides,
      {
        total: end - began,
        setup: setupDone - began,
        load: loadDone - setupDone,
        repeats: repeatMs,
        cold: end - loadDone,
      },
      loadAtStart,
      tokenNotes,
      deleteNote,
      mostWalked,
    );
  } finally {
    for (const pgid of liveGroups) signalGroup(pgid, "SIGKILL");
    await cluster?.stop();
    rmSync(work, { recursive: true, force: true });
    guard.release();
  }
}

await main();
