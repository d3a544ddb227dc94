import { readFileSync } from "node:fs";

/** Below this, traffic can use every file and Bun.serve spins on accept (scripts/repro-fd-spin.ts). */
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
