/**
 * A clock that moves only when told to, with the timers set on it: for code that takes a clock
 * and a timer (src/db/postgres/deadline.ts, groups.ts), so a test says "60 ms pass" instead of
 * sleeping 60 ms and hoping a busy machine kept up.
 */
import type { Timers } from "../../src/core/timers";

/** Lets every settled promise's callbacks run. */
export const settle = () => new Promise((resolve) => setImmediate(resolve));

export interface ManualTimers extends Timers {
  /** Moves the clock on by `ms`, running each timer due by then at its own time, in order. */
  advance(ms: number): Promise<void>;
  /** Timers set and not yet run. */
  pending(): number;
}

export function manualTimers(start = 0): ManualTimers {
  let now = start;
  let order = 0;
  const timers: Array<{ at: number; order: number; callback: () => void }> = [];
  return {
    now: () => now,
    setTimeout(callback, ms) {
      const timer = { at: now + Math.max(0, ms), order: order++, callback };
      timers.push(timer);
      return { unref: () => timer };
    },
    async advance(ms) {
      const target = now + ms;
      await settle();
      for (;;) {
        const due = timers.filter((timer) => timer.at <= target).sort((a, b) => a.at - b.at || a.order - b.order)[0];
        if (!due) break;
        timers.splice(timers.indexOf(due), 1);
        now = due.at;
        due.callback();
        await settle();
      }
      now = target;
    },
    pending: () => timers.length,
  };
}
