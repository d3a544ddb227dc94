import { StoreUnavailable } from "../../core/failures";
import { systemTimers, type Timers } from "../../core/timers";

/**
 * A client-side deadline on every store call: a frozen server would hold a request forever (a late query may
 * still run). With `maxOverdue` (the pool's size) overdue, new calls fail at once; past `maxInFlight`, `capacity`.
 */
export function createDeadline(
  deadlineMs: number,
  maxOverdue: number,
  maxInFlight = Number.POSITIVE_INFINITY,
  timers: Timers = systemTimers,
) {
  let overdue = 0;
  let inFlight = 0;
  // Every call has the same allowance, so arrival order is deadline order: one timer serves them all.
  const waiting = new Set<{ dueAt: number; expire(): void }>();
  let timer: { unref(): unknown } | undefined;

  function watch() {
    if (timer !== undefined) return;
    const oldest = waiting.values().next().value;
    if (oldest === undefined) return;
    timer = timers.setTimeout(expireDue, Math.max(0, oldest.dueAt - timers.now()));
    // Left set when its calls settle in time: it must not hold a stopping process open.
    timer.unref();
  }

  function expireDue() {
    timer = undefined;
    const now = timers.now();
    for (const call of waiting) {
      if (call.dueAt > now) break;
      waiting.delete(call);
      call.expire();
    }
    watch();
  }

  return {
    overdue: () => overdue,
    within<T>(work: () => Promise<T>): Promise<T> {
      if (overdue >= maxOverdue) return Promise.reject(new StoreUnavailable("timeout"));
      if (inFlight >= maxInFlight) return Promise.reject(new StoreUnavailable("capacity"));
      const running = work();
      inFlight++;
      return new Promise<T>((resolve, reject) => {
        let late = false;
        const call = {
          dueAt: timers.now() + deadlineMs,
          expire() {
            late = true;
            overdue++;
            reject(new StoreUnavailable("timeout"));
          },
        };
        waiting.add(call);
        watch();
        const settle = () => {
          inFlight--;
          if (late) overdue--;
          else waiting.delete(call);
        };
        running.finally(settle).then(resolve, reject);
      });
    },
  };
}

/** `store` with each of its methods held to the deadline. */
export function withDeadline<T extends object>(store: T, deadline: ReturnType<typeof createDeadline>): T {
  const guarded: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(store)) {
    guarded[key] =
      typeof member === "function"
        ? (...args: unknown[]) => deadline.within(() => Promise.resolve(member.apply(store, args)))
        : member;
  }
  return guarded as T;
}
