/**
 * Cold start, launch to the first authenticated 200: `bun scripts/cold-start.ts [runs]`.
 * Launches `bun run start` (the service) and `bun run bench/baseline/server.ts` (the floor:
 * plain Bun.serve and bun:sqlite), each on its own throwaway database holding a token made by
 * the CLI, waits for the line naming the port, then sends `GET /plants?limit=1` with the
 * token. Launches alternate between the two, so both see the same background load; prints
 * each side's median and the ratio. Each launch's output goes to a file, not a pipe, so the
 * reader's wake-ups are not counted.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;
const RUNS = Number(process.argv[2] ?? 10);
const DEADLINE_MS = 10_000;

interface Side {
  name: string;
  command: string[];
}

const SIDES: Side[] = [
  { name: "service", command: ["bun", "run", "start"] },
  { name: "floor", command: ["bun", "run", join(ROOT, "bench/baseline/server.ts")] },
];

/** Thrown to stop the run: the servers are stopped and the folder removed before exiting. */
class Failure extends Error {}

function fail(message: string): never {
  throw new Failure(message);
}

async function createToken(database: string): Promise<string> {
  const proc = Bun.spawn(["bun", "run", "cli", "token", "create", "--user", "x"], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: database },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  // Leaves out what `bun run` itself adds: the command echoed and "script exited with code 1".
  const said = err.split("\n").filter((line) => line.trim() && !/^\$ |^error: script /.test(line));
  if (code !== 0) fail(`token create failed: ${said.join("; ")}`);
  const token = /pst_\S+/.exec(out)?.[0];
  if (!token) fail(`token create printed no token: ${out.trim()}`);
  return token;
}

/** Milliseconds from spawning `side` to its first authenticated 200. */
async function launch(side: Side, database: string, token: string, logPath: string): Promise<number> {
  const started = performance.now();
  const proc = Bun.spawn(side.command, {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", DATABASE_URL: database, LOG_LEVEL: "info" },
    stdout: Bun.file(logPath),
    // `bun run` echoes the script's command there: kept out of the way, shown on a failure.
    stderr: Bun.file(`${logPath}.err`),
  });
  const failWith = async (message: string): Promise<never> =>
    fail(`${message}; its stderr: ${(await Bun.file(`${logPath}.err`).text()).trim()}`);
  try {
    let url: string | undefined;
    while (!url) {
      if (performance.now() - started > DEADLINE_MS)
        await failWith(`${side.name} did not listen within ${DEADLINE_MS} ms`);
      if (proc.exitCode !== null) await failWith(`${side.name} exited with ${proc.exitCode} before listening`);
      const file = Bun.file(logPath);
      if (await file.exists()) url = /listening on (http:\/\/[^\s"]+)/.exec(await file.text())?.[1];
      if (!url) await Bun.sleep(1);
    }
    const response = await fetch(`${url}/plants?limit=1`, { headers: { authorization: `Bearer ${token}` } });
    const elapsed = performance.now() - started;
    if (response.status !== 200) await failWith(`${side.name} answered ${response.status}, not 200`);
    await response.arrayBuffer();
    return elapsed;
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

if (!Number.isInteger(RUNS) || RUNS < 1) {
  console.error(`cold-start: runs must be a positive integer, not ${process.argv[2]}`);
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "plant-store-cold-"));
try {
  const times = new Map<string, number[]>();
  const setup = new Map<string, { database: string; token: string }>();
  for (const side of SIDES) {
    const database = join(dir, `${side.name}.sqlite`);
    setup.set(side.name, { database, token: await createToken(database) });
    times.set(side.name, []);
  }
  let launches = 0;
  for (let run = 0; run < RUNS; run++) {
    // Alternate which side goes first, so neither always follows the other's exit.
    const order = run % 2 === 0 ? SIDES : [...SIDES].reverse();
    for (const side of order) {
      const { database, token } = setup.get(side.name) as { database: string; token: string };
      const logPath = join(dir, `${side.name}-${++launches}.log`);
      times.get(side.name)?.push(await launch(side, database, token, logPath));
    }
  }
  const [service, floor] = SIDES.map((side) => median(times.get(side.name) as number[])) as [number, number];
  for (const side of SIDES) {
    const all = (times.get(side.name) as number[]).map((t) => t.toFixed(0)).join(" ");
    console.log(`${side.name.padEnd(7)} median ${median(times.get(side.name) as number[]).toFixed(1)} ms  (${all})`);
  }
  console.log(`ratio   ${(service / floor).toFixed(2)}× the floor (median of ${RUNS} launches each)`);
} catch (error) {
  if (!(error instanceof Failure)) throw error;
  console.error(`cold-start: ${error.message}`);
  process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
