import { existsSync } from "node:fs";
import { createTokenStore, isValidUserName, USER_NAME_RULE } from "./auth/tokens";
import { ConfigError, ensureDatabaseFolder, loadConfig } from "./config";
import { BackupError, backupDatabase } from "./db/backup";
import { checkDatabase } from "./db/check";
import { openDatabase } from "./db/client";
import { applyMigrations, EMBEDDED_MIGRATIONS, migrationStatus } from "./db/migrations";
import { ForeignDatabaseError } from "./db/ownership";
import { faultSummary } from "./http/errors";

const USAGE = `Usage:
  bun run cli token create --user <name>   create the user if needed and print a new token
  bun run cli token list                    show every token: id, user, created, last used
  bun run cli token revoke <token-id>       revoke a token from its next request on
  bun run cli backup <file>                 copy the database, consistently, while the server runs
  bun run cli check                         integrity and foreign key checks, pending migrations
  bun run cli migrate                       apply pending migrations (also: bun run db:migrate)

The database is the server's: DATABASE_URL (default ./data/plants.sqlite).`;

class UsageError extends Error {}
/** A failure already worded for the operator: printed as is, exit 1. */
class CommandError extends Error {}

function openStore() {
  const config = loadConfig();
  ensureDatabaseFolder(config);
  const { sqlite, db } = openDatabase({ path: config.databasePath, synchronous: config.synchronous });
  return { sqlite, tokens: createTokenStore(db) };
}

/** Opens the database read-only, as it is: no migration, and no new empty file when it is missing. */
function openExisting(purpose: string) {
  const config = loadConfig();
  const path = config.databasePath;
  if (path === ":memory:") throw new CommandError(`DATABASE_URL is :memory:; there is no database file to ${purpose}`);
  if (!existsSync(path)) throw new CommandError(`no database at ${path} (DATABASE_URL); nothing to ${purpose}`);
  try {
    return { path, ...openDatabase({ path, synchronous: config.synchronous, readonly: true }) };
  } catch (error) {
    throw new CommandError(`cannot open the database at ${path}: ${faultSummary(error)}`);
  }
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

function backup(target: string): number {
  const { sqlite } = openExisting("back up");
  try {
    const { file, bytes, rows } = backupDatabase(sqlite, target);
    console.log(`Backup written to ${file}`);
    console.log(`Size: ${bytes} bytes`);
    const counts = Object.entries(rows).map(([table, count]) => `${table} ${count}`);
    console.log(`Rows: ${counts.length > 0 ? counts.join(", ") : "no tables"}`);
    return 0;
  } catch (error) {
    if (error instanceof BackupError) throw new CommandError(`backup not written: ${error.message}`);
    throw new CommandError(`backup not written: ${faultSummary(error)}`);
  } finally {
    sqlite.close();
  }
}

function check(): number {
  const { path, sqlite } = openExisting("check");
  const { passed, problems } = checkDatabase(sqlite, EMBEDDED_MIGRATIONS);
  sqlite.close();
  console.log(`Checked ${path}`);
  for (const line of passed) console.log(line);
  for (const problem of problems) console.error(`plant-store: ${problem}`);
  console.log(problems.length === 0 ? "All checks passed." : `${plural(problems.length, "problem")} found.`);
  return problems.length === 0 ? 0 : 1;
}

function migrate(): number {
  const config = loadConfig();
  ensureDatabaseFolder(config);
  const path = config.databasePath;
  let database: ReturnType<typeof openDatabase>;
  try {
    database = openDatabase({ path, synchronous: config.synchronous, migrate: false });
  } catch (error) {
    if (error instanceof ForeignDatabaseError) throw new CommandError(error.message);
    throw new CommandError(`cannot open the database at ${path}: ${faultSummary(error)}`);
  }
  const { sqlite, db } = database;
  try {
    const { pending } = migrationStatus(sqlite, EMBEDDED_MIGRATIONS);
    applyMigrations(db, EMBEDDED_MIGRATIONS);
    if (pending.length === 0) {
      console.log(`${path} is up to date: no pending migrations.`);
    } else {
      const tags = pending.map((migration) => migration.tag).join(", ");
      console.log(`Applied ${plural(pending.length, "migration")} to ${path}: ${tags}`);
    }
    return 0;
  } catch (error) {
    throw new CommandError(`migration failed and was rolled back: ${faultSummary(error)}`);
  } finally {
    sqlite.close();
  }
}

const iso = (date: Date | null) => (date ? date.toISOString() : "-");

function table(rows: string[][]): string {
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

function run(args: string[]): number {
  const [group, command, ...rest] = args;
  if (group === "help" || group === "--help" || group === "-h" || group === undefined) {
    console.log(USAGE);
    return group === undefined ? 2 : 0;
  }
  switch (group) {
    case "backup":
      if (!command || rest.length > 0) throw new UsageError("backup needs exactly one argument: the file to write");
      return backup(command);
    case "check":
      if (command !== undefined) throw new UsageError("check takes no arguments");
      return check();
    case "migrate":
      if (command !== undefined) throw new UsageError("migrate takes no arguments");
      return migrate();
    case "token":
      break;
    default:
      throw new UsageError(`unknown command "${group}"`);
  }

  switch (command) {
    case "create": {
      const flag = rest.indexOf("--user");
      const user = flag >= 0 ? rest[flag + 1] : undefined;
      if (!user) throw new UsageError("token create needs --user <name>");
      if (!isValidUserName(user)) throw new UsageError(`--user ${USER_NAME_RULE}`);
      const { sqlite, tokens } = openStore();
      const issued = tokens.issue(user);
      sqlite.close();
      console.log(`Created token ${issued.id} for user "${issued.user}". It is shown only this once:`);
      console.log(issued.token);
      return 0;
    }
    case "list": {
      const { sqlite, tokens } = openStore();
      const rows = tokens.list();
      sqlite.close();
      if (rows.length === 0) {
        console.log("No tokens.");
        return 0;
      }
      console.log(
        table([
          ["ID", "USER", "CREATED", "LAST USED", "STATUS"],
          ...rows.map((row) => [
            String(row.id),
            row.user,
            iso(row.createdAt),
            iso(row.lastUsedAt),
            row.revokedAt ? `revoked ${iso(row.revokedAt)}` : "active",
          ]),
        ]),
      );
      return 0;
    }
    case "revoke": {
      const id = rest[0];
      if (!id || !/^[0-9]{1,15}$/.test(id)) throw new UsageError("token revoke needs a token id (see token list)");
      const { sqlite, tokens } = openStore();
      const outcome = tokens.revoke(Number(id));
      sqlite.close();
      if (outcome === "not-found") {
        console.error(`plant-store: no token with id ${id}`);
        return 1;
      }
      console.log(outcome === "revoked" ? `Token ${id} revoked.` : `Token ${id} was already revoked.`);
      return 0;
    }
    default:
      throw new UsageError(`unknown token command "${command ?? ""}"`);
  }
}

try {
  process.exitCode = run(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`plant-store: ${error.message}\n\n${USAGE}`);
    process.exitCode = 2;
  } else if (error instanceof ConfigError || error instanceof CommandError) {
    console.error(`plant-store: ${error.message}`);
    process.exitCode = 1;
  } else {
    console.error(`plant-store: ${faultSummary(error)}`);
    process.exitCode = 1;
  }
}
