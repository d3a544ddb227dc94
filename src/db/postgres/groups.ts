import { systemTimers, type Timers } from "../../core/timers";

export interface Waiting<Item, Result> {
  item: Item;
  resolve(result: Result): void;
  reject(error: unknown): void;
}

export interface GroupOptions {
  /** At most this many calls share one statement. */
  maxSize?: number;
  /** Statements running at once; the pool's other connections stay free for other work. */
  concurrency?: number;
  /** A statement out this long (ms) gives up its slot to the calls queued behind it. */
  stallMs?: number;
  /** Statements running at once, stalled ones included. */
  maxRunning?: number;
  timers?: Timers;
}

/**
 * Calls that arrive together go as one statement, in arrival order (decision 0002); `run` answers each. One
 * held up (a row lock, a stalled disk) gives up its slot after `stallMs`, up to `maxRunning` at once.
 */
export function createGroups<Item, Result>(
  run: (group: Array<Waiting<Item, Result>>) => Promise<void>,
  { maxSize = 256, concurrency = 1, stallMs = 50, maxRunning = 2, timers = systemTimers }: GroupOptions = {},
) {
  let queue: Array<Waiting<Item, Result>> = [];
  const inFlight = new Set<{ started: number; stalled: boolean }>();
  let holdingSlots = 0;
  let watch: { unref(): unknown } | undefined;

  function pump() {
    while (holdingSlots < concurrency && inFlight.size < maxRunning && queue.length > 0) {
      const group = queue.length <= maxSize ? queue : queue.slice(0, maxSize);
      queue = queue.length <= maxSize ? [] : queue.slice(maxSize);
      const statement = { started: timers.now(), stalled: false };
      inFlight.add(statement);
      holdingSlots++;
      run(group)
        .catch((error) => {
          for (const waiting of group) waiting.reject(error);
        })
        .finally(() => {
          inFlight.delete(statement);
          if (!statement.stalled) holdingSlots--;
          pump();
        });
    }
    if (queue.length > 0 && watch === undefined && inFlight.size < maxRunning) watchForStall();
  }

  /** Wakes when the oldest statement holding a slot has been out for `stallMs`. */
  function watchForStall() {
    if (stallMs === Number.POSITIVE_INFINITY) return;
    let oldest = Number.POSITIVE_INFINITY;
    for (const statement of inFlight) if (!statement.stalled) oldest = Math.min(oldest, statement.started);
    if (oldest === Number.POSITIVE_INFINITY) return;
    watch = timers.setTimeout(
      () => {
        watch = undefined;
        const now = timers.now();
        for (const statement of inFlight) {
          if (!statement.stalled && now - statement.started >= stallMs) {
            statement.stalled = true;
            holdingSlots--;
          }
        }
        pump();
      },
      Math.max(0, oldest + stallMs - timers.now()),
    );
    watch.unref();
  }

  return {
    add(item: Item): Promise<Result> {
      return new Promise<Result>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        pump();
      });
    },
  };
}
