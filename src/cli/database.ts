import { existsSync } from "node:fs";
import { ensureDatabaseFolder, loadConfig } from "../config";
import { openDatabase } from "../db/client";
import { ForeignDatabaseError } from "../db/ownership";
import { faultSummary } from "../http/errors";

/** A failure already worded for the operator: printed as is, exit 1. */
export class CommandError extends Error {}

type Access = { mode: "read"; purpose: string } | { mode: "write"; migrate: boolean };

/**
 * The one way a command reaches the database, the server's (DATABASE_URL). "read" opens the file
 * as it is, only to read it, and never creates one; "write" creates the folder and the file when
 * missing and brings the schema up to date unless told not to. The database is closed afterwards.
 */
export function withDatabase<T>(
  access: Access,
  use: (database: { path: string } & ReturnType<typeof openDatabase>) => T,
): T {
  const config = loadConfig();
  const path = config.databasePath;
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
      migrate: access.mode === "write" && access.migrate,
    });
  } catch (error) {
    if (error instanceof ForeignDatabaseError) throw new CommandError(error.message);
    throw new CommandError(`cannot open the database at ${path}: ${faultSummary(error)}`);
  }
  try {
    return use({ path, ...database });
  } finally {
    database.sqlite.close();
  }
}
