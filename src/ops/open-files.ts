import { readFileSync } from "node:fs";

/**
 * Below this many open files, ordinary traffic (keep-alive clients, a proxy's pool) can use them
 * all up, and Bun.serve then spins on accept and takes no new connection until some close
 * (scripts/repro-fd-spin.ts): Bun offers no connection cap to stop short of the limit.
 */
export const LOW_OPEN_FILES = 4096;

/**
 * The process's limit on open files, as Bun leaves it: Bun raises the soft limit to the hard
 * one at start, so this is the hard limit (at most 2^20). Read from /proc, so Linux only;
 * undefined elsewhere.
 */
export function openFilesLimit(): number | undefined {
  try {
    const limit = /^Max open files\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1];
    return limit === undefined || limit === "unlimited" ? undefined : Number(limit);
  } catch {
    return undefined;
  }
}
