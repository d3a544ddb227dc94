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
}

/**
 * Calls that arrive together go to PostgreSQL as one statement: one round trip, and one
 * statement's overhead in the server, for all of them. A call goes out at once when a slot is
 * free, so a lone call waits for nothing; under load the calls that queue while the slots are
 * busy leave together, in arrival order. `run` answers every call of its group (group-insert.ts,
 * tokens.ts, plants.ts).
 *
 * One slot by default: a second statement of the same kind in flight only splits the calls that
 * would have shared the first one's successor. Against two slots, in alternating rounds of the
 * bench's scenarios on one instance: mix +9-14 %, write +2-9 %, read +1-4 %, and PostgreSQL's
 * CPU per mixed request 37 against 53 µs (re-measure: `bun run bench --engine postgres` and
 * `bun bench/cpu-split.ts` on each setting).
 */
export function createGroups<Item, Result>(
  run: (group: Array<Waiting<Item, Result>>) => Promise<void>,
  { maxSize = 256, concurrency = 1 }: GroupOptions = {},
) {
  let queue: Array<Waiting<Item, Result>> = [];
  let running = 0;

  function pump() {
    while (running < concurrency && queue.length > 0) {
      const group = queue.length <= maxSize ? queue : queue.slice(0, maxSize);
      queue = queue.length <= maxSize ? [] : queue.slice(maxSize);
      running++;
      run(group)
        .catch((error) => {
          for (const waiting of group) waiting.reject(error);
        })
        .finally(() => {
          running--;
          pump();
        });
    }
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
