import type { Database, SQLQueryBindings } from "bun:sqlite";
import type { ChangeStore } from "../../core/changes";
import { type ChangeRow, changePage, changesOf } from "../plants";
import { CHANGE_SQL, VALUE_FIELDS } from "./queries";
import type { Write, Writer } from "./writer";

/**
 * One writer commits in seq order, so a reader never meets a smaller seq after a larger one. Its own
 * writes wake the feed at once (`logged`); another process's are found by the feed's slow poll.
 */
export function createSqliteChangeStore(sqlite: Database, writes: Writer): ChangeStore & { logged(): void } {
  const page = sqlite.prepare<ChangeRow, SQLQueryBindings[]>(CHANGE_SQL.page).safeIntegers(true);
  const all = sqlite.prepare<ChangeRow, SQLQueryBindings[]>(CHANGE_SQL.all).safeIntegers(true);
  const cursor = sqlite.prepare<{ newest: number; prunedThrough: number }, [number]>(CHANGE_SQL.cursor);
  const newest = sqlite.prepare<{ newest: number }, []>(CHANGE_SQL.newest);
  const watchers = new Set<() => void>();
  const snapshot = sqlite.transaction((ownerId: number, after: bigint, count: number) => {
    const rows = page.all(ownerId, after, count + 1);
    return [rows, cursor.get(ownerId) ?? { newest: 0, prunedThrough: 0 }] as const;
  });

  return {
    async read(ownerId, after, count) {
      // One snapshot: another process's write cannot fall between the page and its marks.
      const [rows, mark] = snapshot(ownerId, after, count);
      return changePage(rows, count, mark, VALUE_FIELDS);
    },
    readAll: async (after, count) => changesOf(all.all(after, count), VALUE_FIELDS),
    newest: async () => newest.get()?.newest ?? 0,
    // One writer, which commits in seq order: what committed is readable.
    settle: async () => {},
    async prune(before, count) {
      const steps: Write[] = [
        { sql: CHANGE_SQL.markPruned, mode: "run", params: [before, count] },
        { sql: CHANGE_SQL.prune, mode: "all", params: [before, count] },
      ];
      return (await writes.run<unknown[]>({ steps }, { bookkeeping: true })).length;
    },
    async watch(wake) {
      watchers.add(wake);
      return async () => {
        watchers.delete(wake);
      };
    },
    logged() {
      for (const wake of watchers) wake();
    },
  };
}
