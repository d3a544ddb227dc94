import type { Database } from "bun:sqlite";

/** When the snapshot ends at the latest: the end of this turn of the event loop (tests give one that never comes). */
export type TurnEnd = (end: () => void) => void;

/**
 * A turn's reads share one read transaction, so they take the WAL read lock once, not once a
 * statement (docs/decisions/0015-read-snapshot.md). The writer ends it before each commit.
 */
export function readSnapshot(sqlite: Database, atTurnEnd: TurnEnd = setImmediate) {
  const begin = sqlite.prepare("BEGIN");
  const commit = sqlite.prepare("COMMIT");
  const rollback = sqlite.prepare("ROLLBACK");
  let open = false;
  const ended = (statement: typeof commit) => {
    try {
      if (sqlite.inTransaction) statement.run();
      return true;
    } catch {
      return false;
    }
  };
  /** Never throws (at a turn's end a throw ends the process): a closed connection has none to end. */
  const end = () => {
    if (!open) return;
    open = false;
    if (!ended(commit)) ended(rollback);
  };
  return {
    /** Before a read: opens the turn's snapshot, unless one (or a write's transaction) is open. */
    enter() {
      if (open || sqlite.inTransaction) return;
      begin.run();
      open = true;
      atTurnEnd(end);
    },
    end,
  };
}
