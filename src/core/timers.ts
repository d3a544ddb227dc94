/** Injected so tests can drive time (tests/support/clock.ts). */
export interface Timers {
  now(): number;
  setTimeout(callback: () => void, ms: number): { unref(): unknown };
}

export const systemTimers: Timers = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
};

/**
 * A turn of the event loop between a stream's chunks: Bun pulls again as soon as the socket takes
 * the bytes, so a long list would hold every other request. setTimeout(0) waits at least 1 ms.
 */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** `promise`, or a rejection with `timeout()` once `ms` have passed without it. */
export async function within<T>(promise: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  let timer: Timer | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeout()), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
