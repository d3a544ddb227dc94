import { StoreUnavailable } from "../../core/failures";
import { systemTimers, type Timers } from "../../core/timers";

export { systemTimers, type Timers };

/**
 * A client-side deadline on every store call. `statement_timeout` is enforced by the server, so
 * a server that stops answering (frozen, or cut off by the network with no RST) would hold a
 * request forever: measured with every postgres process SIGSTOPped, a list and a create hung
 * past 20 s while /readyz answered 503. A call past its deadline is answered with the `timeout`
 * store failure; its query may still run later, which is why the message says a retried write
 * is safe rather than "nothing was changed".
 *
 * The calls left behind still hold, or wait for, pool connections. Once as many are overdue as
 * the pool has connections, every connection is taken by a call that is not coming back soon,
 * so new calls fail at once instead of queueing behind them (the queue would otherwise grow
 * with every request for as long as the outage lasts). They flow again as soon as the overdue
 * calls settle: the server answers, or the kernel gives the connection up.
 *
 * `maxInFlight` caps the calls waiting at once (MAX_IN_FLIGHT, as SQLite caps writes waiting for
 * their commit): past it a call is refused with `capacity` rather than joining an ever longer
 * queue for the pool.
 */
export function createDeadline(
  deadlineMs: number,
  maxOverdue: number,
  maxInFlight = Number.POSITIVE_INFINITY,
  timers: Timers = systemTimers,
) {
  let overdue = 0;
  let inFlight = 0;
  // Every call has the same allowance, so calls in order of arrival are in order of deadline:
  // one timer, set for the oldest, serves them all (a timer per call was 3 % of an instance's
  // CPU under reads, two calls a request, `bun --cpu-prof`).
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
    /** How many calls are past their deadline and not settled yet. */
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
        running.then(
          (value) => {
            settle();
            resolve(value);
          },
          (error) => {
            settle();
            reject(error);
          },
        );
      });
    },
  };
}

export type Deadline = ReturnType<typeof createDeadline>;

/** `store` with each of its methods held to the deadline (they all return promises); other members as they are. */
export function withDeadline<T extends object>(store: T, deadline: Deadline): T {
  const guarded: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(store)) {
    guarded[key] =
      typeof member === "function"
        ? (...args: unknown[]) => deadline.within(() => Promise.resolve(member.apply(store, args)))
        : member;
  }
  return guarded as T;
}
