/**
 * One wrk run of a Lua scenario (bench/lua/<name>.lua) and the figures read from its output.
 */
import { join } from "node:path";
import { CONNECTIONS, SECONDS } from "./options";
import { fail, ROOT } from "./targets";

const LUA_DIR = join(ROOT, "bench", "lua");

export interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** Bytes read per response, headers included: Transfer/sec over Requests/sec. */
  bytesPerResponse: number;
  /** What the script's done() printed as `key=value` words on a line of its own, if anything. */
  counts: Record<string, number>;
  /** Server CPU µs per request, when the caller measured it (bench/rounds.ts). */
  cpuUs?: number;
}

const toMs = (value: string, unit: string) => Number(value) * ({ us: 0.001, ms: 1, s: 1000 }[unit] ?? Number.NaN);
const toBytes = (value: string, unit: string) =>
  Number(value) * ({ B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[unit] ?? Number.NaN);

/**
 * Runs `bench/lua/<script>.lua` against `url`; `args` follow `--` on wrk's command line, `env`
 * joins its environment. Two threads by default: the read, write and mix scripts give each
 * thread its own user in turn.
 */
export async function wrk(
  url: string,
  script: string,
  args: string[],
  seconds = SECONDS,
  { threads, connections } = { threads: 2, connections: CONNECTIONS },
  env: Record<string, string> = {},
): Promise<WrkResult> {
  const proc = Bun.spawn(
    [
      "wrk",
      `-t${threads}`,
      `-c${connections}`,
      `-d${seconds}s`,
      "--latency",
      "-s",
      join(LUA_DIR, `${script}.lua`),
      url,
      "--",
    ].concat(args),
    { env: { ...process.env, ...env, BENCH_LUA_DIR: LUA_DIR }, stdout: "pipe", stderr: "pipe" },
  );
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if ((await proc.exited) !== 0) fail(`wrk failed: ${err}`);
  const latency = (p: string) => {
    const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)$`, "m").exec(out);
    return match ? toMs(match[1] as string, match[2] as string) : Number.NaN;
  };
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const transfer = /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB)/.exec(out);
  const countsLine = /^counts:((?: \w+=\d+)+)$/m.exec(out)?.[1] ?? "";
  const counts = Object.fromEntries(
    [...countsLine.matchAll(/(\w+)=(\d+)/g)].map((match) => [match[1] as string, Number(match[2])]),
  );
  return {
    rps,
    p50: latency("50"),
    p99: latency("99"),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    errors: socketErrors ? socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
    bytesPerResponse: transfer ? toBytes(transfer[1] as string, transfer[2] as string) / rps : Number.NaN,
    counts,
  };
}
