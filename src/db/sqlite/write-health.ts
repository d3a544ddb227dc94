import type { Database } from "bun:sqlite";
import { statfsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { StoreFailureKind } from "../../core/failures";

const PROBE_EVERY_MS = 1_000;
/** Room a probe wants while out of space: a page fits in the WAL a failed commit left, and would flap readiness. */
const PROBE_ROOM_BYTES = 256 * 1024;

/** SQLITE_FULL means the filesystem or `max_page_count`: the least room either leaves. */
function roomLeft(sqlite: Database): number {
  const pragma = (name: string) => (sqlite.query(`PRAGMA ${name}`).get() as Record<string, number> | null)?.[name] ?? 0;
  let room = (pragma("max_page_count") - pragma("page_count")) * pragma("page_size");
  if (sqlite.filename !== "" && sqlite.filename !== ":memory:") {
    const disk = statfsSync(dirname(sqlite.filename));
    room = Math.min(room, disk.bavail * disk.bsize);
  }
  return room;
}

/** Whether the path still names the file this connection opened: deleted or replaced, it would take writes no one reads. */
function fileInPlace(sqlite: Database): () => boolean {
  if (sqlite.filename === "" || sqlite.filename === ":memory:") return () => true;
  const opened = statSync(sqlite.filename);
  return () => {
    try {
      const now = statSync(sqlite.filename, { throwIfNoEntry: false });
      return now?.ino === opened.ino && now.dev === opened.dev;
    } catch {
      return false; // its folder gone or not a folder (ENOTDIR), or out of reach
    }
  };
}

/**
 * Why writes fail now, for readiness: set by a commit that fails for it, cleared by a client's
 * write or a probe; bookkeeping writes fit where clients' do not, so they clear nothing.
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
    fileInPlace: fileInPlace(sqlite),
    set(next: StoreFailureKind | undefined, error?: unknown) {
      if (next === problem) return;
      problem = next;
      onChange?.(next, error);
    },
    /** The disk may have recovered, and there is room. */
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
