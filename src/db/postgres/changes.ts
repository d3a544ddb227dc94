import type { SQL } from "bun";
import type { ChangeStore } from "../../core/changes";
import { type FaultLog, faultDetail } from "../../core/fault";
import { type ChangeRow, changePage, changesOf } from "../plants";
import { CHANGE_SQL } from "./change-queries";
import { countOf } from "./client";
import { VALUE_FIELDS } from "./queries";

/** The stamp's advisory lock key ("seq" in ASCII). */
const STAMP_LOCK_KEY = 0x736571;
const STAMP_BATCH = 1000;
/** A write's stamp waits this long for others to share it: a stamp is a transaction of four statements. */
const STAMP_SPACING_MS = 100;
/** A row still the inbox's oldest this long after a follower first saw it was left behind by its writer. */
const LEFT_BEHIND_MS = 1_000;
/** Stamps are announced on it; a wake-up only, never the data: a listener that was away gets nothing. */
export const CHANGES_CHANNEL = "plant_changes";

/**
 * Seqs are given after commit, in write order, by a stamp under an advisory lock: after each write here, and
 * before a read that finds changes waiting, another instance's too (docs/decisions/0010-change-log-order.md).
 */
export function createPostgresChangeStore(
  client: SQL,
  log: FaultLog,
  clock: () => number = Date.now,
): ChangeStore & { logged(): void } {
  let running: Promise<void> | undefined;
  let again: Promise<void> | undefined;
  /** The stamp a write scheduled, until it has run. */
  let scheduled: Promise<void> | undefined;
  const localWatchers = new Set<() => void>();

  async function stampAll(): Promise<void> {
    let stamped = 0;
    for (;;) {
      const count = await client.begin(async (tx) => {
        await tx.unsafe(CHANGE_SQL.stampLock, [STAMP_LOCK_KEY]);
        const rows = await tx.unsafe(CHANGE_SQL.stamp, [STAMP_BATCH]);
        if (rows.length > 0) await tx.unsafe("SELECT pg_notify($1, '')", [CHANGES_CHANNEL]);
        return rows.length;
      });
      stamped += count;
      if (count < STAMP_BATCH) break;
    }
    if (stamped > 0) for (const wake of localWatchers) wake();
  }

  /** Resolves once a stamp that began after the call has ended; calls meanwhile share the next one. */
  function stamp(): Promise<void> {
    if (!running) {
      running = stampAll().finally(() => {
        running = undefined;
      });
      return running;
    }
    again ??= running
      .catch(() => {})
      .then(() => {
        again = undefined;
        return stamp();
      });
    return again;
  }

  const oldestWaiting = async () => ((await client.unsafe(CHANGE_SQL.oldestWaiting)) as Array<{ pos: string }>)[0]?.pos;
  /** The inbox's oldest row when a follower last looked, and since when it has been. */
  let oldest: { pos: string; since: number } | undefined;
  /** When the last stamp's NOTIFY arrived, from any instance. */
  let heard = Number.NEGATIVE_INFINITY;

  async function stampWaiting(): Promise<void> {
    if ((await oldestWaiting()) !== undefined) await stamp();
  }

  /** Stamps only rows a stopped instance left behind (the oldest still waiting LEFT_BEHIND_MS after first seen):
   * stamping whatever waited answered other instances' stamps with its own, in a loop while writes went on. */
  async function stampLeftBehind(): Promise<void> {
    if (clock() - heard < LEFT_BEHIND_MS) return;
    const pos = await oldestWaiting();
    const now = clock();
    if (pos === undefined || pos !== oldest?.pos) oldest = pos === undefined ? undefined : { pos, since: now };
    else if (now - oldest.since >= LEFT_BEHIND_MS) await stamp();
  }

  return {
    async read(ownerId, after, count) {
      await stampWaiting();
      // One statement, one snapshot: a prune or a stamp cannot fall between the page and its marks.
      type Row = ChangeRow & { newest: number; prunedThrough: number };
      const found = (await client.unsafe(CHANGE_SQL.page, [ownerId, after, count + 1])) as Row[];
      const rows = found.filter((row) => row.seq !== null);
      return changePage(rows, count, found[0] ?? { newest: 0, prunedThrough: 0 }, VALUE_FIELDS);
    },
    async readAll(after, count) {
      await stampLeftBehind();
      return changesOf((await client.unsafe(CHANGE_SQL.all, [after, count])) as ChangeRow[], VALUE_FIELDS);
    },
    newest: async () => ((await client.unsafe(CHANGE_SQL.newest)) as [{ newest: number }])[0].newest,
    prune: (before, count) => countOf(client, CHANGE_SQL.prune, [new Date(before), count]),
    async watch(wake) {
      localWatchers.add(wake);
      const subscription = await client.listen(CHANGES_CHANNEL, () => {
        heard = clock();
        wake();
      });
      return async () => {
        localWatchers.delete(wake);
        await subscription.unlisten();
      };
    },
    /** The dispatcher, woken by each NOTIFY, joins the stamp a write here scheduled, or stamps what was left behind. */
    settle: (dispatcher = false) => (dispatcher ? (scheduled ?? stampLeftBehind()) : stampWaiting()),
    /** Writes that commit within STAMP_SPACING_MS of each other share a stamp. */
    logged() {
      scheduled ??= new Promise<void>((resolve) => {
        const due = setTimeout(() => {
          scheduled = undefined;
          stamp()
            .catch((error) =>
              log("stamping the change log failed; the next read or write stamps it", faultDetail(error)),
            )
            .finally(resolve);
        }, STAMP_SPACING_MS);
        due.unref();
      });
    },
  };
}
