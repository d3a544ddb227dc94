import { getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { withoutPassword } from "../config";
import { migrate, migrationStatus, type PostgresTarget } from "../db/postgres/client";
import * as schema from "../db/postgres/schema";
import { CommandError, withPostgres } from "./database";
import { appliedMigrations, plural, verdict } from "./format";

/** The schema's tables and the one only a hand-written migration creates, by name. */
const OWN_TABLES = [
  ...Object.values(schema)
    .filter((table) => is(table, PgTable))
    .map((table) => getTableName(table)),
  "rate_limits",
].sort();

/** pg_dump does it best: run it when it is on PATH, else show how. */
export async function postgresBackup(target: PostgresTarget, file: string): Promise<number> {
  // The password goes in PGPASSWORD, not on the command line, where `ps` shows it to every local user.
  const url = new URL(target.url);
  const password = decodeURIComponent(url.password);
  url.password = "";
  const command = ["pg_dump", "--format=custom", `--file=${file}`, "--dbname", url.toString()];
  const shown = ["pg_dump", "--format=custom", `--file=${file}`, "--dbname", `'${withoutPassword(target.url)}'`];
  if (!Bun.which("pg_dump")) {
    console.log("On PostgreSQL, back up with pg_dump (not found on PATH here):");
    console.log(`  ${shown.join(" ")}`);
    console.log("Restore with: pg_restore --dbname <empty database> <file>");
    return 1;
  }
  if (await Bun.file(file).exists()) throw new CommandError(`backup not written: ${file} already exists`);
  console.log(`Running: ${shown.join(" ")}`);
  const env = password === "" ? process.env : { ...process.env, PGPASSWORD: password };
  const run = Bun.spawn(command, { stdout: "inherit", stderr: "pipe", env });
  const [status, errors] = await Promise.all([run.exited, new Response(run.stderr).text()]);
  if (status !== 0) throw new CommandError(`pg_dump failed (exit ${status}): ${errors.trim().split("\n")[0] ?? ""}`);
  console.log(`Backup written to ${file}`);
  return 0;
}

export async function postgresCheck(target: PostgresTarget): Promise<number> {
  return withPostgres(target, async ({ client }) => {
    const problems: string[] = [];
    const [{ version }] = (await client`SELECT current_setting('server_version') AS version`) as [{ version: string }];
    console.log(`Checked ${withoutPassword(target.url)}`);
    console.log(`Connected: PostgreSQL ${version}`);
    for (const table of OWN_TABLES) {
      try {
        const [{ rows }] = (await client.unsafe(`SELECT count(*)::int AS rows FROM "${table}"`)) as [{ rows: number }];
        console.log(`Table ${table}: ${plural(rows, "row")}`);
      } catch {
        problems.push(`table ${table} is missing or cannot be read`);
      }
    }
    const invalid: Array<{ conname: string }> = await client`
      SELECT conname FROM pg_constraint
      WHERE NOT convalidated AND conrelid::regclass::text = ANY(${OWN_TABLES})`;
    for (const { conname } of invalid) problems.push(`constraint ${conname} is not validated`);
    if (invalid.length === 0) console.log("Constraints: all validated");
    const status = await migrationStatus(client);
    problems.push(...status.problems);
    const tags = status.pending.map((m) => m.tag).join(", ");
    console.log(`Migrations: ${status.applied} applied, ${status.pending.length} pending${tags && ` (${tags})`}`);
    if (status.pending.length > 0) problems.push(`${plural(status.pending.length, "migration")} pending`);
    return verdict(problems);
  });
}

/** Under the same advisory lock as a starting server. */
export async function postgresMigrate(target: PostgresTarget): Promise<number> {
  const applied = await withPostgres(target, ({ client }) => migrate(client));
  appliedMigrations(withoutPassword(target.url), applied);
  return 0;
}
