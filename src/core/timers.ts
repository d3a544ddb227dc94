/** Injected so tests can drive time (tests/support/clock.ts). */
export interface Timers {
  now(): number;
  setTimeout(callback: () => void, ms: number): { unref(): unknown };
}

export const systemTimers: Timers = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
};
