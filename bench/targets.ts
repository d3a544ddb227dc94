/**
 * What every bench scenario shares: the two targets (the service and the no-framework
 * baseline), starting one on a database file, the CLI, and reading a process's memory.
 */
import { join } from "node:path";

export const ROOT = new URL("..", import.meta.url).pathname;

export interface Target {
  name: "service" | "baseline";
  command: string[];
  env: Record<string, string>;
}

export const TARGETS: Target[] = [
  {
    name: "service",
    command: ["bun", "--max-http-header-size=16384", join(ROOT, "src/index.ts")],
    // Production settings: durable writes; rate limiting off so the load is not throttled.
    env: { DB_SYNCHRONOUS: "FULL", RATE_LIMIT_PER_MINUTE: "0" },
  },
  {
    name: "baseline",
    command: ["bun", join(ROOT, "bench/baseline/server.ts")],
    env: { DB_SYNCHRONOUS: "NORMAL" },
  },
];

export interface Running {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Servers started and not yet stopped: a failing bench stops them rather than leave them behind. */
const live = new Set<{ kill(): void }>();
/** What else a failing bench must not leave behind (a database cluster): synchronous, run once. */
const cleanups = new Set<() => void>();

/** Runs `cleanup` if the bench fails before `release()` is called. */
export function onFail(cleanup: () => void): { release(): void } {
  cleanups.add(cleanup);
  return { release: () => cleanups.delete(cleanup) };
}

export function fail(message: string): never {
  console.error(`bench: ${message}`);
  for (const proc of live) proc.kill();
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

/**
 * Starts the target on `database` (its DATABASE_URL), its output going to a file named from
 * `logPrefix`: beside the database file by default; give one for a database that is no file.
 */
export async function startTarget(target: Target, database: string, logPrefix = database): Promise<Running> {
  const logPath = logPathFor(logPrefix, target.name);
  let exited = false;
  const proc = Bun.spawn(target.command, {
    cwd: ROOT,
    env: { ...process.env, ...target.env, PORT: "0", HOST: "127.0.0.1", DATABASE_URL: database },
    stdout: Bun.file(logPath),
    stderr: "inherit",
    onExit: () => {
      exited = true;
      live.delete(proc);
    },
  });
  live.add(proc);
  const url = await waitForListening(target.name, logPath, () => exited);
  return {
    url,
    pid: proc.pid,
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
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
