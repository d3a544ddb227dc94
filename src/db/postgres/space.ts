import type { SQL } from "bun";
import { storeFailureKind } from "../../core/failures";
import { type FaultLog, faultDetail } from "../../core/fault";
import { STATUS_SQL } from "./queries";

/** While writes fail for lack of space, the room probe runs at most this often. */
const PROBE_EVERY_MS = 1_000;

/**
 * Whether the server is out of space for our writes, for readiness: set when a write fails with
 * disk full (SQLSTATE 53100), cleared when a client's write succeeds or the room probe does
 * (STATUS_SQL.room, run now and then while it lasts, so readiness turns back by itself). A
 * delete needs no new space and a create may fit in a page with room, so either answer can
 * change with the next write; right after a write fails for lack of space it is "full".
 */
export function createSpaceWatch(client: SQL, log: FaultLog) {
  let full = false;
  let probedAt = Number.NEGATIVE_INFINITY;

  function set(next: boolean, error?: unknown) {
    if (next === full) return;
    full = next;
    if (full) log("writes are failing: full", faultDetail(error));
    else log("writes succeed again", undefined);
  }

  return {
    full(): boolean {
      const now = performance.now();
      if (full && now - probedAt >= PROBE_EVERY_MS) {
        probedAt = now;
        client.unsafe(STATUS_SQL.room).then(
          () => set(false),
          () => {},
        );
      }
      return full;
    },

    /** `store` with its methods named in `writes` watched: their outcome sets or clears the state. */
    watch<T extends object>(store: T, writes: ReadonlyArray<keyof T & string>): T {
      const watched = { ...store } as Record<string, unknown>;
      for (const name of writes) {
        const write = store[name] as (...args: unknown[]) => Promise<unknown>;
        watched[name] = (...args: unknown[]) =>
          write.apply(store, args).then(
            (value) => {
              set(false);
              return value;
            },
            (error) => {
              if (storeFailureKind(error) === "full") set(true, error);
              throw error;
            },
          );
      }
      return watched as T;
    },
  };
}
