import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;

/** A scratch folder removed by the returned cleanup. */
export function scratchDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "plant-store-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs the CLI as a user would (`bun run cli ...`) and returns its output. */
export async function runCli(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn(["bun", "run", "cli", ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
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

export interface RunningServer {
  url: string;
  /** Everything printed to stdout up to the "listening" line. */
  startupOutput: string;
  stop(): Promise<number>;
}

/**
 * Starts `bun run start` on port 0 and waits for its "listening" line, which names the port
 * the OS picked: no guessed ports, no sleeps.
 */
export async function startServer(env: Record<string, string>): Promise<RunningServer> {
  const proc = Bun.spawn(["bun", "run", "start"], {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", ...env },
    stdout: "pipe",
    stderr: "pipe",
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
      reader.releaseLock();
      return {
        url: match[1],
        startupOutput: output,
        stop: async () => {
          proc.kill("SIGTERM");
          return proc.exited;
        },
      };
    }
  }
}
