/**
 * A throwaway PostgreSQL cluster for tests and the bench: `startCluster()` runs initdb in a fresh temp folder
 * (data, log and unix socket all inside it), starts the server on a free 127.0.0.1 port, and
 * `stop()` shuts it down and removes the folder. Run directly (`bun scripts/pg-cluster.ts`), it
 * prints the URL and keeps the cluster up until SIGINT/SIGTERM.
 */

import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";

const INSTALL_HINT = "install it: apt-get install -y postgresql";
// initdb refuses to run as root, so root runs the server tools as this OS user.
const SERVER_USER = "postgres";
// A port the OS just freed can be taken again before postgres binds it; retry on that only.
const PORT_ATTEMPTS = 3;

export interface Cluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres; trust auth, so no password. */
  url: string;
  port: number;
  dir: string;
  /** Stops the server abruptly (as a crash or a lost host would), keeping its data. */
  halt(): Promise<void>;
  /** Starts a halted server again on the same port and data. */
  resume(): Promise<void>;
  stop(): Promise<void>;
  /** stop(), synchronously: for a process about to exit, which cannot wait for a promise. */
  stopNow(): void;
  /** The running server's processes: the postmaster first, then its backends and workers. */
  serverPids(): number[];
}

/** The folder holding initdb and pg_ctl: PG_BIN, else the highest /usr/lib/postgresql/<v>/bin, else PATH. */
export function findPgBin(): string {
  const fromEnv = process.env.PG_BIN;
  if (fromEnv) {
    if (!existsSync(join(fromEnv, "initdb"))) throw new Error(`PG_BIN=${fromEnv} has no initdb; ${INSTALL_HINT}`);
    return fromEnv;
  }
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+(\.\d+)?$/.test(name) && existsSync(join(root, name, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0] !== undefined) return join(root, versions[0], "bin");
  const onPath = Bun.which("initdb");
  if (onPath) return onPath.slice(0, onPath.lastIndexOf("/"));
  throw new Error(`PostgreSQL not found (no initdb in PG_BIN, ${root}/*/bin or PATH); ${INSTALL_HINT}`);
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

function idOf(flag: "-u" | "-g", user: string): number {
  const result = Bun.spawnSync(["id", flag, user], { stdout: "pipe", stderr: "ignore" });
  const id = Number(result.stdout.toString().trim());
  if (!result.success || !Number.isInteger(id)) {
    throw new Error(`no OS user "${user}" to run PostgreSQL as root; ${INSTALL_HINT}`);
  }
  return id;
}

/** How to run a server tool: as `postgres` when we are root, else as ourselves. */
function commandRunner(): (argv: string[]) => string[] {
  if (process.getuid?.() !== 0) return (argv) => argv;
  const runuser = Bun.which("runuser");
  if (runuser) return (argv) => [runuser, "-u", SERVER_USER, "--", ...argv];
  return (argv) => ["su", SERVER_USER, "-s", "/bin/sh", "-c", argv.map(shellQuote).join(" ")];
}

async function run(argv: string[], cwd: string): Promise<{ ok: boolean; output: string }> {
  // stdin ignored and cwd inside the folder: `postgres` may not be able to read our cwd.
  const proc = Bun.spawn(argv, { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { ok: code === 0, output: `${out}${err}` };
}

function lastLine(text: string): string {
  return (
    text
      .trim()
      .split("\n")
      .filter((line) => line.trim() !== "")
      .at(-1) ?? "(no output)"
  );
}

function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

export interface ClusterOptions {
  /**
   * fsync and synchronous_commit on, as a production server runs: for the bench, whose write
   * figures mean something only when a commit waits for the disk. Off (the default), fsync is off.
   */
  durable?: boolean;
}

/** Starts a fresh cluster; on any failure it removes what it made and rejects with a one-line reason. */
export async function startCluster({ durable = false }: ClusterOptions = {}): Promise<Cluster> {
  const bin = findPgBin();
  const as = commandRunner();
  const dir = mkdtempSync(join(tmpdir(), "plant-store-pg-"));
  const data = join(dir, "data");
  const log = join(dir, "postgres.log");
  const pgCtl = join(bin, "pg_ctl");

  // Immediate: nothing in a throwaway cluster is worth a checkpoint.
  const stopCommand = as([pgCtl, "-D", data, "-m", "immediate", "-w", "stop"]);
  const serverUp = () => existsSync(join(data, "postmaster.pid"));
  const remove = (stopped: boolean, inBackground = false) => {
    if (!stopped) killPostmaster(data);
    // A test run leaves hundreds of databases behind: removing them took 20 s of every run.
    if (inBackground) Bun.spawn(["rm", "-rf", dir], { stdio: ["ignore", "ignore", "ignore"] }).unref();
    else rmSync(dir, { recursive: true, force: true });
  };
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => remove(!serverUp() || (await run(stopCommand, dir)).ok, true))();
    return stopping;
  };
  const quiet = { cwd: dir, stdin: "ignore", stdout: "ignore", stderr: "ignore" } as const;
  const stopNow = () => remove(!serverUp() || Bun.spawnSync(stopCommand, quiet).success);

  try {
    if (process.getuid?.() === 0) chownSync(dir, idOf("-u", SERVER_USER), idOf("-g", SERVER_USER));
    // --no-sync: a throwaway cluster never has to survive a machine crash, so skip initdb's closing flush.
    const init = await run(
      as([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]),
      dir,
    );
    if (!init.ok) throw new Error(`initdb failed: ${lastLine(init.output)}`);
    for (let attempt = 1; ; attempt++) {
      const port = freePort();
      // fsync=off is for tests only: it trades crash safety for speed, and this cluster is thrown away.
      const durability = durable ? "-c fsync=on -c synchronous_commit=on" : "-c fsync=off";
      const options = `-k ${shellQuote(dir)} -p ${port} -c listen_addresses=127.0.0.1 ${durability} -c max_connections=300`;
      const start = () => run(as([pgCtl, "-D", data, "-l", log, "-w", "-o", options, "start"]), dir);
      const started = await start();
      if (started.ok) {
        const halt = async () => {
          const halted = await run(stopCommand, dir);
          if (!halted.ok) throw new Error(`pg_ctl stop failed: ${lastLine(halted.output)}`);
        };
        const resume = async () => {
          const resumed = await start();
          if (!resumed.ok) throw new Error(`pg_ctl start failed: ${lastLine(resumed.output)}`);
        };
        return {
          url: `postgres://postgres@127.0.0.1:${port}/postgres`,
          port,
          dir,
          halt,
          resume,
          stop,
          stopNow,
          serverPids: () => serverPids(data),
        };
      }
      const serverLog = existsSync(log) ? readFileSync(log, "utf8") : "";
      if (!/could not bind/.test(serverLog) || attempt === PORT_ATTEMPTS) {
        throw new Error(`pg_ctl start failed: ${lastLine(serverLog || started.output)}`);
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The postmaster's pid from its pid file, or undefined when the server is not running. */
function postmasterPid(data: string): number | undefined {
  const pidFile = join(data, "postmaster.pid");
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

function serverPids(data: string): number[] {
  const postmaster = postmasterPid(data);
  if (postmaster === undefined) return [];
  const children = Bun.spawnSync(["pgrep", "-P", String(postmaster)])
    .stdout.toString()
    .split("\n");
  return [postmaster, ...children.filter((line) => line.trim() !== "").map(Number)];
}

/** Last resort when pg_ctl could not stop the server: its backends exit once the postmaster is gone. */
function killPostmaster(data: string): void {
  const pid = postmasterPid(data);
  if (pid === undefined) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Creates database `name` (copied from `template` when given) and returns its URL. */
export async function createDatabase(url: string, name: string, template?: string): Promise<string> {
  const sql = new SQL(url);
  try {
    const from = template === undefined ? "" : ` TEMPLATE ${quoteIdent(template)}`;
    await sql.unsafe(`CREATE DATABASE ${quoteIdent(name)}${from}`);
  } finally {
    await sql.close();
  }
  const target = new URL(url);
  target.pathname = `/${encodeURIComponent(name)}`;
  return target.toString();
}

if (import.meta.main) {
  let cluster: Promise<Cluster> | undefined;
  const shutdown = async (signal: NodeJS.Signals) => {
    const started = await cluster?.catch(() => undefined);
    const began = performance.now();
    await started?.stop();
    if (started) console.log(`stopped in ${Math.round(performance.now() - began)} ms`);
    process.exit(signal === "SIGINT" ? 130 : 143);
  };
  process.once("SIGINT", shutdown);
  process.once("SIGTERM", shutdown);
  const began = performance.now();
  cluster = startCluster();
  try {
    const { url } = await cluster;
    console.log(`started in ${Math.round(performance.now() - began)} ms; stop with Ctrl-C`);
    console.log(url);
    // Signal handlers alone do not keep Bun running; the cluster must outlive this line.
    setInterval(() => {}, 1 << 30);
  } catch (error) {
    console.error(`pg-cluster: ${(error as Error).message}`);
    process.exit(1);
  }
}
