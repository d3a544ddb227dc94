import { existsSync } from "node:fs";
import { ensureDatabaseFolder, loadConfig, withoutPassword } from "../config";
import { StartupRefusal, StoreUnavailable } from "../core/failures";
import { faultSummary } from "../core/fault";
import type { Stores } from "../core/stores";
import { openStores } from "../db/open";
import { connect, type PostgresTarget } from "../db/postgres/client";
import { openDatabase } from "../db/sqlite/client";
import { ForeignDatabaseError } from "../db/sqlite/ownership";

/** Worded for the operator: printed as is, exit 1. */
export class CommandError extends Error {}

type Access = { mode: "read"; purpose: string } | { mode: "write" };

/** The SQLite file itself, not migrated: "read" never creates one; "write" does. */
export async function withDatabase<T>(
  access: Access,
  use: (database: { path: string } & ReturnType<typeof openDatabase>) => T | Promise<T>,
): Promise<T> {
  const config = loadConfig();
  if (config.database.engine !== "sqlite") throw new CommandError("this command works on a SQLite database only");
  const path = config.database.path;
  if (access.mode === "read") {
    const { purpose } = access;
    if (path === ":memory:")
      throw new CommandError(`DATABASE_URL is :memory:; there is no database file to ${purpose}`);
    if (!existsSync(path)) throw new CommandError(`no database at ${path} (DATABASE_URL); nothing to ${purpose}`);
  } else {
    ensureDatabaseFolder(config);
  }
  let database: ReturnType<typeof openDatabase>;
  try {
    database = openDatabase({
      path,
      synchronous: config.synchronous,
      readonly: access.mode === "read",
      migrate: false,
    });
  } catch (error) {
    if (error instanceof ForeignDatabaseError) throw new CommandError(error.message);
    throw new CommandError(`cannot open the database at ${path}: ${faultSummary(error)}`);
  }
  try {
    return await use({ path, ...database });
  } finally {
    database.sqlite.close();
  }
}

/** The server's stores, opened as the server opens them (db/open.ts). */
export async function withStores<T>(use: (stores: Stores) => Promise<T>): Promise<T> {
  const config = loadConfig();
  let stores: Stores;
  try {
    ensureDatabaseFolder(config);
    stores = await openStores(config, () => {});
  } catch (error) {
    if (error instanceof StartupRefusal) throw new CommandError(error.message);
    throw new CommandError(`cannot open the database at ${config.databaseName}: ${faultSummary(error)}`);
  }
  try {
    return await use(stores);
  } catch (error) {
    if (error instanceof StoreUnavailable && error.kind === "busy")
      throw new CommandError(
        `another process held the database's write lock for WRITE_LOCK_TIMEOUT_MS (${config.writeLockTimeoutMs} ms); nothing was changed, try again`,
      );
    if (error instanceof CommandError || config.database.engine === "sqlite") throw error;
    throw new CommandError(`cannot use the database at ${config.databaseName}: ${faultSummary(error)}`);
  } finally {
    await stores.close();
  }
}

/** One PostgreSQL connection; failures worded for the operator. */
export async function withPostgres<T>(
  target: PostgresTarget,
  use: (connection: ReturnType<typeof connect>) => Promise<T>,
): Promise<T> {
  const connection = connect(target, 1);
  try {
    return await use(connection);
  } catch (error) {
    if (error instanceof CommandError) throw error;
    if (error instanceof StartupRefusal) throw new CommandError(error.message);
    throw new CommandError(`cannot use the database at ${withoutPassword(target.url)}: ${faultSummary(error)}`);
  } finally {
    await connection.client.close({ timeout: 1 }).catch(() => {});
  }
}
