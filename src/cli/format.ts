import { basename } from "node:path";

/*
 * How the commands print: the program's name, counted nouns, times and aligned columns.
 */

/**
 * The command as the operator runs it, for the usage text and hints: the compiled binary under
 * the name it was started by (process.argv0; argv[0] itself reads "bun" there), or the package script.
 */
export const PROGRAM = Bun.isStandaloneExecutable ? basename(process.argv0 || process.execPath) : "bun run cli";

export const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

export const iso = (date: Date | null) => (date ? date.toISOString() : "-");

/** Rows padded to aligned columns, two spaces apart, no trailing blanks. */
export function table(rows: string[][]): string {
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
