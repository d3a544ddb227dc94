/**
 * Waiting for something to become true, the one way the tests do it: poll, with a deadline, and
 * fail with what was last seen. Never a fixed sleep: a test that waits for a condition goes on
 * the moment it holds, and a busy machine only makes it wait longer, up to `timeoutMs`.
 */
import { inspect } from "node:util";

export interface UntilOptions<T> {
  /** When the value read is good enough; by default, when it is truthy. */
  holds?: (value: T) => boolean;
  /** Give up (and throw) after this long; 10 s by default. */
  timeoutMs?: number;
  /** Pause between reads; 20 ms by default. */
  intervalMs?: number;
  /** What is being waited for, for the error. */
  what?: string;
}

/**
 * Reads `read()` until `holds` is true of its value, and returns that value. Past `timeoutMs`
 * it throws, naming `what` and the last value read.
 *
 *   await until(() => hook.received.length, { holds: (n) => n === 2 });
 *   await until(async () => (await fetch(url)).status === 200, { what: "ready" });
 */
export async function until<T>(read: () => T | Promise<T>, options: UntilOptions<T> = {}): Promise<T> {
  const { holds = Boolean, timeoutMs = 10_000, intervalMs = 20, what = "the condition" } = options;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (holds(value)) return value;
    if (performance.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${inspect(value, { depth: 3 })}`,
      );
    }
    await Bun.sleep(intervalMs);
  }
}

/** `promise`, or a rejection naming `what` if it has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
