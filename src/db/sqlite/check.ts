import type { Database } from "bun:sqlite";
import type { Migration } from "../migrations";
import { migrationStatus } from "./migrations";

/** A badly damaged file would otherwise print thousands of lines. */
const MAX_LINES = 100;

/** Integrity, foreign keys and pending migrations; changes nothing. */
export function checkDatabase(sqlite: Database, migrations: Migration[]) {
  const passed: string[] = [];
  const problems: string[] = [];
  /** One check: `ok` when it finds nothing; a check that cannot run is a problem too. */
  const check = (name: string, run: () => { found: string[]; ok: string }) => {
    try {
      const { found, ok } = run();
      if (found.length === 0) passed.push(`${name}: ${ok}`);
      problems.push(...found.map((line) => `${name}: ${line}`));
    } catch (error) {
      problems.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };

  check("integrity", () => {
    // Damage to a b-tree comes back as one row of many lines, headed "*** in database main ***".
    const lines = sqlite
      .query<{ integrity_check: string }, []>(`PRAGMA integrity_check(${MAX_LINES})`)
      .all()
      .flatMap((row) => row.integrity_check.split("\n"))
      .filter((line) => line !== "" && !/^\*\*\* in database \S+ \*\*\*$/.test(line));
    return { found: lines.length === 1 && lines[0] === "ok" ? [] : lines, ok: "ok" };
  });
  check("foreign keys", () => {
    const violations = sqlite
      .query<{ table: string; rowid: number | null; parent: string }, []>("PRAGMA foreign_key_check")
      .all();
    const found = violations
      .slice(0, MAX_LINES)
      .map((v) => `${v.table} row ${v.rowid ?? "(without rowid)"} refers to a missing ${v.parent} row`);
    if (violations.length > MAX_LINES) found.push(`${violations.length - MAX_LINES} more violations not shown`);
    return { found, ok: "ok" };
  });
  check("migrations", () => {
    const status = migrationStatus(sqlite, migrations);
    const pending = status.pending.map(({ tag }) => `${tag} is not applied yet (bun run db:migrate applies it)`);
    return { found: [...pending, ...status.problems], ok: `${status.applied} applied, none pending` };
  });
  return { passed, problems };
}
