import { systemTimers, type Timers } from "./deadline";

/** One call waiting for its group's statement. */
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
  /**
   * A statement out this long (ms) stops holding its slot: the calls queued behind it leave in
   * another statement. Infinity: never.
   */
  stallMs?: number;
  /** Statements running at once, stalled ones included. */
  maxRunning?: number;
  timers?: Timers;
}

/**
 * Calls that arrive together go to PostgreSQL as one statement: one round trip, and one
 * statement's overhead in the server, for all of them. A call goes out at once when a slot is
 * free, so a lone call waits for nothing; under load the calls that queue while the slots are
 * busy leave together, in arrival order. `run` answers every call of its group (group-insert.ts,
 * tokens.ts, plants.ts' deletes).
 *
 * One slot by default: a second statement of the same kind in flight only splits the calls that
 * would have shared the first one's successor (docs/decisions/0002).
 *
 * But one statement held up (a create waiting for a row lock another session holds, until the
 * statement timeout; a commit stalled on the disk) would hold every later call of its kind. So a
 * statement out for `stallMs` gives up its slot, and the calls queued behind it go out in
 * another one, up to `maxRunning` statements. 50 ms is far above a statement's usual time (a
 * grouped commit's p99 was 8-37 ms under the bench's write load) and far below the statement
 * timeout. Two statements of a kind at most: a server so loaded that statements pass 50 ms
 * routinely then runs two of a kind, the setting measured above, and never more. One timer at
 * most, armed only while calls wait behind a busy slot.
 */
export function createGroups<Item, Result>(
  run: (group: Array<Waiting<Item, Result>>) => Promise<void>,
  { maxSize = 256, concurrency = 1, stallMs = 50, maxRunning = 2, timers = systemTimers }: GroupOptions = {},
) {
  let queue: Array<Waiting<Item, Result>> = [];
  /** Statements in flight, by when they went out; `stalled` ones no longer hold a slot. */
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
    // A stopping process is not held by it: every call still waits for its own statement.
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
