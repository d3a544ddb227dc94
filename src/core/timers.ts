/** The clock and the timer that timed work runs on: the system's, but in tests (tests/support/clock.ts). */
export interface Timers {
  now(): number;
  setTimeout(callback: () => void, ms: number): { unref(): unknown };
}

export const systemTimers: Timers = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
};
