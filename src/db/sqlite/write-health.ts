import type { Database } from "bun:sqlite";
import { statfsSync } from "node:fs";
import { dirname } from "node:path";
import type { StoreFailureKind } from "../../core/failures";

/** While writes fail for lack of space or I/O, a probe write is tried at most this often. */
const PROBE_EVERY_MS = 1_000;
/**
 * The room a probe wants before it tries its write while the store is out of space: a write of
 * one page fits in what a failed commit left of the WAL while clients' writes still fail, so the
 * write alone would turn readiness back on and off again.
 */
export const PROBE_ROOM_BYTES = 256 * 1024;

/**
 * Bytes the database can still grow by: what the filesystem holds free for us, and what
 * `max_page_count` leaves (SQLITE_FULL means one or the other).
 */
function roomLeft(sqlite: Database): number {
  const pragma = (name: string) => (sqlite.query(`PRAGMA ${name}`).get() as Record<string, number> | null)?.[name] ?? 0;
  let room = (pragma("max_page_count") - pragma("page_count")) * pragma("page_size");
  if (sqlite.filename !== "" && sqlite.filename !== ":memory:") {
    const disk = statfsSync(dirname(sqlite.filename));
    room = Math.min(room, disk.bavail * disk.bsize);
  }
  return room;
}

/**
 * Why writes are failing now, for readiness. A lasting problem (space, I/O, damage) is set by a
 * commit that fails for it, and lasts until a client's write commits or a probe does: so right
 * after a write fails for lack of space readiness says so, every time. Bookkeeping writes (a
 * token's last use, the dispatcher's) are small enough to fit where clients' writes do not, so
 * they clear nothing.
 */
export function createWriteHealth(
  sqlite: Database,
  onChange?: (problem: StoreFailureKind | undefined, error?: unknown) => void,
) {
  let problem: StoreFailureKind | undefined;
  let probedAt = Number.NEGATIVE_INFINITY;
  const userVersion = sqlite.prepare<{ user_version: number }, []>("PRAGMA user_version");
  return {
    current: () => problem,
    set(next: StoreFailureKind | undefined, error?: unknown) {
      if (next === problem) return;
      problem = next;
      onChange?.(next, error);
    },
    /** Whether a probe is due now: the problem is one the disk may recover from, and there is room. */
    probeDue(): boolean {
      const now = performance.now();
      if ((problem !== "full" && problem !== "io") || now - probedAt < PROBE_EVERY_MS) return false;
      probedAt = now;
      return problem !== "full" || roomLeft(sqlite) >= PROBE_ROOM_BYTES;
    },
    /** Rewrites the header with the value it holds: a real write that changes nothing. */
    probe: () => sqlite.run(`PRAGMA user_version = ${userVersion.get()?.user_version ?? 0}`),
  };
}
