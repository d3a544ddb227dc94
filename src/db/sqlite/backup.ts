import { Database } from "bun:sqlite";
import { closeSync, existsSync, fsyncSync, linkSync, openSync, renameSync, statSync, unlinkSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** A backup that was not made; its message is the one line the CLI prints. */
export class BackupError extends Error {}

function fsyncPath(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A link fails with EEXIST, so an existing file is never overwritten, even in a race. */
function publishWithoutOverwriting(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw new BackupError(`${to} already exists; choose a new file name`);
    // A filesystem without hard links: the check and the rename are two steps there.
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EXDEV") throw error;
    if (existsSync(to)) throw new BackupError(`${to} already exists; choose a new file name`);
    renameSync(from, to);
    return;
  }
  unlinkSync(from);
}

function countRows(path: string): Record<string, number> {
  const copy = new Database(path, { readonly: true, strict: true });
  try {
    const tables = copy
      .query<{ name: string }, []>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_\\_%' ESCAPE '\\' ORDER BY name",
      )
      .all();
    const count = (name: string) =>
      copy.query<{ rows: number }, []>(`SELECT count(*) AS rows FROM "${name.replaceAll('"', '""')}"`).get()?.rows ?? 0;
    return Object.fromEntries(tables.map(({ name }) => [name, count(name)]));
  } finally {
    copy.close();
  }
}

/**
 * `VACUUM INTO` copies one instant while the server writes on; the copy is synced under a temporary
 * name and linked into place, so a crash never leaves a half copy under `target`.
 */
export function backupDatabase(sqlite: Database, target: string) {
  const file = resolve(target);
  if (existsSync(file)) throw new BackupError(`${file} already exists; choose a new file name`);
  const folder = dirname(file);
  if (!existsSync(folder)) throw new BackupError(`the folder ${folder} does not exist`);
  const partial = `${file}.partial-${process.pid}-${Date.now()}`;
  try {
    sqlite.run("VACUUM INTO ?", [partial]);
    fsyncPath(partial);
    publishWithoutOverwriting(partial, file);
  } finally {
    if (existsSync(partial)) unlinkSync(partial);
  }
  fsyncPath(folder);
  return { file, bytes: statSync(file).size, rows: countRows(file) };
}
