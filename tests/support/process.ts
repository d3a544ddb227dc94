import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("../..", import.meta.url).pathname;

/** A scratch folder removed by the returned cleanup. */
export function scratchDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "plant-store-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs a command to its exit and returns what it printed. `env` adds to this process's. */
export async function runToExit(
  command: string[],
  { env = {}, cwd = ROOT, stdin }: { env?: Record<string, string>; cwd?: string; stdin?: string } = {},
) {
  const proc = Bun.spawn(command, {
    cwd,
    env: { ...process.env, ...env },
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { stdout, stderr, code };
}

/** Runs the CLI as a user would (`bun run cli ...`) and returns its output. */
export function runCli(args: string[], env: Record<string, string>) {
  return runToExit(["bun", "run", "cli", ...args], { env });
}

/** The server without `bun run` in between: for tests that SIGKILL it. */
export const DIRECT = ["bun", "--max-http-header-size=16384", "src/index.ts"];

export interface RunningServer {
  url: string;
  /** The `bun run start` process; the server itself is its child. */
  pid: number;
  /** Everything printed to stdout up to the "listening" line. */
  startupOutput: string;
  /** Sends SIGTERM and resolves to the exit code. */
  stop(): Promise<number>;
  kill(signal: NodeJS.Signals | number): void;
  /** Signals the whole process group, as a terminal's Ctrl-C does (started with `group`). */
  killGroup(signal: NodeJS.Signals): void;
  exited: Promise<number>;
  /** All the process printed, stdout and stderr, once it has exited. */
  output(): Promise<string>;
  /** Stdout and stderr apart, once it has exited. */
  streams(): Promise<{ stdout: string; stderr: string }>;
  /** Resolves once stdout matches `pattern`; rejects if the process exits first. */
  waitForOutput(pattern: RegExp): Promise<void>;
}

/**
 * Starts `bun run start` on port 0 and waits for its "listening" line, which names the port
 * the OS picked: no guessed ports, no sleeps. `DIRECT` as the command starts the server itself,
 * so a signal reaches it rather than a `bun run` parent.
 */
export async function startServer(
  env: Record<string, string>,
  {
    command = ["bun", "run", "start"],
    cwd = ROOT,
    group = false,
  }: { command?: string[]; cwd?: string /** In a process group of its own. */; group?: boolean } = {},
): Promise<RunningServer> {
  const proc = Bun.spawn(command, {
    cwd,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", ...env },
    stdout: "pipe",
    stderr: "pipe",
    detached: group,
  });
  const decoder = new TextDecoder();
  let output = "";
  const reader = proc.stdout.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      const stderr = await new Response(proc.stderr).text();
      throw new Error(`server exited before listening (code ${await proc.exited}): ${output}${stderr}`);
    }
    output += decoder.decode(value, { stream: true });
    const match = /listening on (http:\/\/[^\s]+)/.exec(output);
    if (match?.[1]) {
      const startupOutput = output;
      const waiters = new Set<() => void>();
      // Keep reading so the pipe never fills up and blocks the server.
      const rest = (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (!done) output += decoder.decode(value, { stream: true });
          for (const wake of waiters) wake();
          if (done) return;
        }
      })();
      let ended = false;
      void rest.then(() => {
        ended = true;
        for (const wake of waiters) wake();
      });
      const stderr = new Response(proc.stderr).text();
      return {
        url: match[1],
        pid: proc.pid,
        startupOutput,
        stop: async () => {
          proc.kill("SIGTERM");
          return proc.exited;
        },
        kill: (signal) => proc.kill(signal),
        killGroup: (signal) => {
          if (!group) throw new Error("killGroup needs a server started with { group: true }");
          process.kill(-proc.pid, signal);
        },
        exited: proc.exited,
        output: async () => {
          await Promise.all([proc.exited, rest]);
          return output + (await stderr);
        },
        streams: async () => {
          await Promise.all([proc.exited, rest]);
          return { stdout: output, stderr: await stderr };
        },
        waitForOutput: (pattern) =>
          new Promise<void>((resolve, reject) => {
            const check = () => {
              if (pattern.test(output)) {
                waiters.delete(check);
                resolve();
              } else if (ended) {
                waiters.delete(check);
                reject(new Error(`process ended without printing ${pattern}: ${output}`));
              }
            };
            waiters.add(check);
            check();
          }),
      };
    }
  }
}
