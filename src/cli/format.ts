import { basename } from "node:path";

/** The compiled binary's name as started (argv[0] reads "bun" there), or the package script. */
export const PROGRAM = Bun.isStandaloneExecutable ? basename(process.argv0 || process.execPath) : "bun run cli";

export const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

export const iso = (date: Date | null) => (date ? date.toISOString() : "-");

/** Control characters written as \uXXXX: a cell (a token's name) must not drive the operator's terminal. */
const shown = (cell: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: they are what is replaced.
  cell.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

export function table(cells: string[][]): string {
  const rows = cells.map((row) => row.map(shown));
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** A check's problems on stderr and its verdict; the exit code. */
export function verdict(problems: string[]): number {
  for (const problem of problems) console.error(`plant-store: ${problem}`);
  console.log(problems.length === 0 ? "All checks passed." : `${plural(problems.length, "problem")} found.`);
  return problems.length === 0 ? 0 : 1;
}

export function appliedMigrations(database: string, applied: Array<{ tag: string }>): void {
  const tags = applied.map((migration) => migration.tag).join(", ");
  if (applied.length === 0) console.log(`${database} is up to date: no pending migrations.`);
  else console.log(`Applied ${plural(applied.length, "migration")} to ${database}: ${tags}`);
}
