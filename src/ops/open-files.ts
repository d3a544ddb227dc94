import { readFileSync } from "node:fs";

/**
 * Below this, ordinary traffic can use every file, and Bun.serve then spins on accept
 * (scripts/repro-fd-spin.ts): Bun has no connection cap to stop short of the limit.
 */
export const LOW_OPEN_FILES = 4096;

/** Bun raises the soft limit to the hard one at start; read from /proc, so undefined off Linux. */
export function openFilesLimit(): number | undefined {
  try {
    const limit = /^Max open files\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1];
    return limit === undefined || limit === "unlimited" ? undefined : Number(limit);
  } catch {
    return undefined;
  }
}
