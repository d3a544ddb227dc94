import { storeFailureKind } from "./failures";
import { faultSummary } from "./fault";

const FIRST_WAIT_MS = 250;
const LONGEST_WAIT_MS = 4_000;

export interface StartupRetry {
  /** DB_STARTUP_TIMEOUT_MS; 0 tries once. */
  timeoutMs: number;
  /** Told before each wait what failed and when the next attempt is. */
  note(line: string): void;
  sleep?: (ms: number) => Promise<unknown>;
  now?: () => number;
}

/**
 * Retries `attempt` with doubling waits while the database is "unreachable" and time is left, so a
 * service started beside its database comes up once it does; any other failure is thrown.
 */
export async function retryWhileUnreachable<T>(
  attempt: () => Promise<T>,
  { timeoutMs, note, sleep = Bun.sleep, now = () => performance.now() }: StartupRetry,
): Promise<T> {
  const deadline = now() + timeoutMs;
  for (let wait = FIRST_WAIT_MS; ; wait = Math.min(wait * 2, LONGEST_WAIT_MS)) {
    try {
      return await attempt();
    } catch (error) {
      const left = deadline - now();
      if (storeFailureKind(error) !== "unreachable" || left <= 0) throw error;
      const pause = Math.min(wait, left);
      note(
        `${faultSummary(error)}; trying again in ${(pause / 1000).toFixed(2)} s (${(left / 1000).toFixed(1)} s left of DB_STARTUP_TIMEOUT_MS)`,
      );
      await sleep(pause);
    }
  }
}
