import type { SQL } from "bun";
import { storeFailureKind } from "../../core/failures";
import { type FaultLog, faultDetail } from "../../core/fault";
import { STATUS_SQL } from "./queries";

const PROBE_EVERY_MS = 1_000;

/**
 * Whether the server is out of space, for readiness: set when a write fails with 53100, cleared
 * when a write or the room probe (run now and then while it lasts) succeeds.
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

    /** `store` with the methods named in `writes` setting or clearing the state. */
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
