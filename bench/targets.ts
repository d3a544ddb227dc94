import { readFileSync } from "node:fs";
/**
 * What every bench scenario shares: the targets (the service, with its default log level and
 * with LOG_LEVEL=warn, the like-for-like baseline, the bare floor and the usual pick, Fastify +
 * better-sqlite3 on Node), starting one on a
 * database, the CLI, and reading a process's memory.
 */
import { join } from "node:path";
import { loadConfig } from "../src/config";

export const ROOT = new URL("..", import.meta.url).pathname;

export type TargetName = "service" | "service-limit" | "service-warn" | "baseline" | "floor" | "bare" | "fastify";

export interface Target {
  name: TargetName;
  command: string[];
  /** The package.json script that starts it as an operator would, `bun run <script>` (cold start vs the floor). */
  script?: string;
  env: Record<string, string>;
}

/** What `bun run start` runs, read from package.json: its leading `NAME=value` words are the environment. */
export function startScript(): { text: string; command: string[]; env: Record<string, string> } {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { start: string } };
  const words = scripts.start.split(/\s+/);
  const first = words.findIndex((word) => !/^\w+=/.test(word));
  const command = words.slice(first).map((word) => (word.endsWith(".ts") ? join(ROOT, word) : word));
  const settings = words.slice(0, first).map((word) => word.split("=", 2) as [string, string]);
  return { text: scripts.start, command, env: Object.fromEntries(settings) };
}
const START = startScript();
const SERVICE_COMMAND = START.command;
const BASELINE_COMMAND = ["bun", join(ROOT, "bench/baseline/server.ts")];
/** The per-token limit of a service started with no setting (src/config.ts), said explicitly so the caller's shell cannot change it. */
export const DEFAULT_RATE_LIMIT = loadConfig({}).rateLimitPerMinute;
const LIMIT_ON = String(DEFAULT_RATE_LIMIT);

// The service's defaults (durable writes, the access log on), said explicitly; the per-token rate
// limit off (one bench client is far past any token's budget), and on beside it ("service-limit",
// whose load turns over many tokens per user, bench/load-tokens.ts, so it is not throttled).
const SERVICE_ENV = { ...START.env, DB_SYNCHRONOUS: "FULL", RATE_LIMIT_PER_MINUTE: "0", LOG_LEVEL: "info" };

export const TARGETS: Target[] = [
  { name: "service", command: SERVICE_COMMAND, script: "start", env: SERVICE_ENV },
  { name: "service-limit", command: SERVICE_COMMAND, env: { ...SERVICE_ENV, RATE_LIMIT_PER_MINUTE: LIMIT_ON } },
  { name: "service-warn", command: SERVICE_COMMAND, script: "start", env: { ...SERVICE_ENV, LOG_LEVEL: "warn" } },
  { name: "baseline", command: BASELINE_COMMAND, env: { DB_SYNCHRONOUS: "NORMAL" } },
  {
    name: "floor",
    command: BASELINE_COMMAND,
    script: "bench:floor",
    env: { DB_SYNCHRONOUS: "NORMAL", BASELINE_BARE: "1" },
  },
  // The floor on a plain plants/tokens schema: no covering index, no foreign keys (bench/baseline/db.ts).
  {
    name: "bare",
    command: BASELINE_COMMAND,
    env: { DB_SYNCHRONOUS: "NORMAL", BASELINE_BARE: "1", BASELINE_SCHEMA: "bare" },
  },
  // WAL with synchronous=NORMAL, as such an app usually runs (and as the floor); installed on demand (bench/usual-pick.ts).
  {
    name: "fastify",
    command: ["node", join(ROOT, "bench/contenders/fastify/server.mjs")],
    env: { DB_SYNCHRONOUS: "NORMAL", LOG_LEVEL: "info" },
  },
];

export const target = (name: TargetName) => TARGETS.find((candidate) => candidate.name === name) as Target;

/**
 * The service with the rate limit off, for the scenarios whose load is two tokens' (large-store,
 * webhook-budget): their tables' headers say so.
 */
export const SERVICE_LIMIT_OFF: Target = target("service");

/**
 * On PostgreSQL (bench/postgres.ts): the service with its defaults, the per-token limit included,
 * at either log level, and with the limit off (against which the limit's cost is read); the
 * baseline and floor on Bun's SQL client.
 */
const POSTGRES_BASELINE_COMMAND = ["bun", join(ROOT, "bench/baseline/postgres-server.ts")];
export const POSTGRES_TARGETS = {
  service: { ...target("service"), env: { ...START.env, RATE_LIMIT_PER_MINUTE: LIMIT_ON, LOG_LEVEL: "info" } },
  serviceWarn: { ...target("service-warn"), env: { ...START.env, RATE_LIMIT_PER_MINUTE: LIMIT_ON, LOG_LEVEL: "warn" } },
  serviceLimitOff: { ...target("service"), env: { ...START.env, RATE_LIMIT_PER_MINUTE: "0", LOG_LEVEL: "info" } },
  baseline: { name: "baseline", command: POSTGRES_BASELINE_COMMAND, env: {} },
  floor: {
    name: "floor",
    command: POSTGRES_BASELINE_COMMAND,
    script: "bench:floor:postgres",
    env: { BASELINE_BARE: "1" },
  },
} satisfies Record<string, Target>;

export interface Running {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** How to kill the servers started and not yet stopped: a failing bench stops them rather than leave them behind. */
const live = new Set<() => void>();
/** What else a failing bench must not leave behind (a database cluster): synchronous, run once. */
const cleanups = new Set<() => void>();

/** Runs `cleanup` if the bench fails before `release()` is called. */
export function onFail(cleanup: () => void): { release(): void } {
  cleanups.add(cleanup);
  return { release: () => cleanups.delete(cleanup) };
}

export function fail(message: string): never {
  console.error(`bench: ${message}`);
  for (const kill of live) kill();
  for (const cleanup of cleanups) cleanup();
  process.exit(1);
}

/**
 * Servers write their output to a file beside the database, as a service writing its log to
 * disk would: read through a pipe by this process, the access log's 30,000 lines a second
 * would cost the shared CPU more than the service spends writing them.
 */
async function waitForListening(name: string, logPath: string, exited: () => boolean): Promise<string> {
  for (;;) {
    const file = Bun.file(logPath);
    const output = (await file.exists()) ? await file.text() : "";
    const url = /listening on (http:\/\/[^\s"]+)/.exec(output)?.[1];
    if (url) return url;
    if (exited()) fail(`${name} exited before listening: ${output}`);
    await Bun.sleep(2);
  }
}

let launches = 0;
/** A fresh file per launch: Bun does not truncate a file it is given as stdout. */
const logPathFor = (logPrefix: string, name: string) => `${logPrefix}.${name}-${++launches}.log`;

/** Signals every process of the group; false once none is left. */
function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once no process of the group is left, SIGKILLing it past the deadline. */
async function groupGone(pgid: number, name: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (signalGroup(pgid, 0)) {
    if (performance.now() > deadline) {
      signalGroup(pgid, "SIGKILL");
      fail(`${name}: a process started by bun run outlived it by 10 s`);
    }
    await Bun.sleep(5);
  }
}

/**
 * Starts the target on `database` (its DATABASE_URL), its output going to a file named from
 * `logPrefix`: beside the database file by default; give one for a database that is no file.
 * With `viaBunRun`, through `bun run <script>` in a process group of its own: bun run starts
 * the server as its child, and stopping signals the whole group, then waits until it is empty.
 */
export async function startTarget(
  target: Target,
  database: string,
  logPrefix = database,
  viaBunRun = false,
): Promise<Running> {
  if (viaBunRun && target.script === undefined) fail(`${target.name} has no package.json script to bun run`);
  const logPath = logPathFor(logPrefix, target.name);
  let exited = false;
  const proc = Bun.spawn(viaBunRun ? ["bun", "run", "--silent", target.script as string] : target.command, {
    cwd: ROOT,
    env: { ...process.env, ...target.env, PORT: "0", HOST: "127.0.0.1", DATABASE_URL: database },
    stdout: Bun.file(logPath),
    stderr: "inherit",
    detached: viaBunRun,
    onExit: () => {
      exited = true;
      if (!viaBunRun) live.delete(kill);
    },
  });
  const kill = viaBunRun ? () => signalGroup(proc.pid, "SIGTERM") : () => proc.kill("SIGTERM");
  live.add(kill);
  const url = await waitForListening(target.name, logPath, () => exited);
  return {
    url,
    pid: proc.pid,
    stop: async () => {
      kill();
      await proc.exited;
      if (viaBunRun) await groupGone(proc.pid, target.name);
      live.delete(kill);
    },
  };
}

/** Creates plants 1..count for the token's owner through the API, 100 requests at a time. */
export async function seedOverHttp(url: string, token: string, count: number) {
  const ids = Array.from({ length: count }, (_, i) => i + 1);
  for (let start = 0; start < ids.length; start += 100) {
    const responses = await Promise.all(
      ids.slice(start, start + 100).map((id) =>
        fetch(`${url}/plants`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ id, name: `Seed ${id}`, tag: "seed" }),
        }),
      ),
    );
    if (responses.some((r) => r.status !== 200)) fail(`seeding ${url} failed`);
  }
}

/** Runs the service's CLI on `database` (its DATABASE_URL); answers its last line of output. */
export async function cli(args: string[], database: string): Promise<string> {
  const proc = Bun.spawn(["bun", join(ROOT, "src/cli.ts"), ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: database },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) fail(`cli ${args.join(" ")} failed: ${stderr.trim().split("\n").at(-1) ?? ""}`);
  return stdout.trim().split("\n").at(-1) ?? "";
}

/** /proc's clock ticks per second (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** User plus system CPU seconds of a process, all its threads, from /proc; undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] as string).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return undefined;
  }
}

/** A memory figure of a process, in KiB, from /proc: VmHWM (the peak so far) or VmRSS. */
export async function memoryKiB(pid: number, field: "VmHWM" | "VmRSS"): Promise<number> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
}

/** Peak resident memory of a process so far, from the kernel's high-water mark. */
export const peakRssKiB = (pid: number) => memoryKiB(pid, "VmHWM");

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

export const fmt = (n: number, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : "-";
