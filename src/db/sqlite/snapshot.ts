import type { Database } from "bun:sqlite";

/** When the snapshot ends at the latest: the end of this turn of the event loop (tests give one that never comes). */
export type TurnEnd = (end: () => void) => void;

/**
 * Reads on one connection share one read transaction until the turn ends or a commit is reported,
 * so a turn's requests take the WAL read lock once, not once per statement
 * (docs/decisions/0015-read-snapshot.md). A commit reported ends it first: every read after a
 * write's answer sees that write.
 */
export function readSnapshot(sqlite: Database, atTurnEnd: TurnEnd = setImmediate) {
  const begin = sqlite.prepare("BEGIN");
  const commit = sqlite.prepare("COMMIT");
  const rollback = sqlite.prepare("ROLLBACK");
  let open = false;
  /** Never throws: it runs at a turn's end, where a throw would end the process. */
  const end = () => {
    if (!open) return;
    open = false;
    try {
      if (sqlite.inTransaction) commit.run();
    } catch {
      try {
        if (sqlite.inTransaction) rollback.run();
      } catch {
        // A closed or damaged connection: no transaction is left to end.
      }
    }
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

export type ReadSnapshot = ReturnType<typeof readSnapshot>;
