import type { Database } from "bun:sqlite";
import type { Migration } from "../migrations";
import { migrationStatus } from "./migrations";

/** A badly damaged file would otherwise print thousands of lines. */
const MAX_LINES = 100;

export interface CheckReport {
  passed: string[];
  problems: string[];
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Integrity, foreign keys and pending migrations; changes nothing. */
export function checkDatabase(sqlite: Database, migrations: Migration[]): CheckReport {
  const passed: string[] = [];
  const problems: string[] = [];

  try {
    // Damage to a b-tree comes back as one row of many lines, headed "*** in database main ***".
    const lines = sqlite
      .query<{ integrity_check: string }, []>(`PRAGMA integrity_check(${MAX_LINES})`)
      .all()
      .flatMap((row) => row.integrity_check.split("\n"))
      .filter((line) => line !== "" && !/^\*\*\* in database \S+ \*\*\*$/.test(line));
    if (lines.length === 1 && lines[0] === "ok") passed.push("integrity: ok");
    else problems.push(...lines.map((line) => `integrity: ${line}`));
  } catch (error) {
    problems.push(`integrity: ${message(error)}`);
  }

  try {
    const violations = sqlite
      .query<{ table: string; rowid: number | null; parent: string }, []>("PRAGMA foreign_key_check")
      .all();
    if (violations.length === 0) passed.push("foreign keys: ok");
    for (const violation of violations.slice(0, MAX_LINES)) {
      problems.push(
        `foreign keys: ${violation.table} row ${violation.rowid ?? "(without rowid)"} refers to a missing ${violation.parent} row`,
      );
    }
    if (violations.length > MAX_LINES) {
      problems.push(`foreign keys: ${violations.length - MAX_LINES} more violations not shown`);
    }
  } catch (error) {
    problems.push(`foreign keys: ${message(error)}`);
  }

  try {
    const status = migrationStatus(sqlite, migrations);
    for (const migration of status.pending) {
      problems.push(`migrations: ${migration.tag} is not applied yet (bun run db:migrate applies it)`);
    }
    problems.push(...status.problems.map((problem) => `migrations: ${problem}`));
    if (status.pending.length === 0 && status.problems.length === 0) {
      passed.push(`migrations: ${status.applied} applied, none pending`);
    }
  } catch (error) {
    problems.push(`migrations: ${message(error)}`);
  }

  return { passed, problems };
}
