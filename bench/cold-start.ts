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
import { fail, median, startTarget, type Target } from "./targets";

export const LAUNCHES = 5;

export interface ColdStartOptions {
  /** Where the servers' output goes (startTarget's logPrefix); by default beside the database file. */
  logPrefix?: string;
  viaBunRun?: boolean;
}

/** The median, in ms, of LAUNCHES launches of `target` on `database`, each asked `GET /plants?limit=1` with `token`. */
export async function coldStart(
  target: Target,
  database: string,
  token: string,
  { logPrefix = database, viaBunRun = false }: ColdStartOptions = {},
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < LAUNCHES; i++) {
    const started = performance.now();
    const server = await startTarget(target, database, logPrefix, viaBunRun);
    const response = await fetch(`${server.url}/plants?limit=1`, { headers: { authorization: `Bearer ${token}` } });
    const elapsed = performance.now() - started;
    await response.arrayBuffer();
    await server.stop();
    if (response.status !== 200) fail(`${target.name}: the cold-start request got ${response.status}, not 200`);
    times.push(elapsed);
  }
  return median(times);
}
