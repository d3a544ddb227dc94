import { existsSync } from "node:fs";
import { type Config, ensureDatabaseFolder, loadConfig, withoutPassword } from "../config";
import { StartupRefusal, StoreUnavailable } from "../core/failures";
import { faultSummary } from "../core/fault";
import type { TokenStore, WebhookStore } from "../core/stores";
import { connect, migrate, type PostgresTarget } from "../db/postgres/client";
import { createPostgresTokenStore } from "../db/postgres/tokens";
import { createPostgresWebhookStore } from "../db/postgres/webhooks";
import { WRITE_SQL } from "../db/sqlite/built-sql";
import { openDatabase } from "../db/sqlite/client";
import { ForeignDatabaseError } from "../db/sqlite/ownership";
import { createSqliteTokenStore } from "../db/sqlite/tokens";
import { createSqliteWebhookStore } from "../db/sqlite/webhooks";
import { inThreadWriter } from "../db/sqlite/writer";

/** A failure already worded for the operator: printed as is, exit 1. */
export class CommandError extends Error {}

type Access = { mode: "read"; purpose: string } | { mode: "write"; migrate: boolean };

/**
 * The one way a command reaches the database, the server's (DATABASE_URL). "read" opens the file
 * as it is, only to read it, and never creates one; "write" creates the folder and the file when
 * missing and brings the schema up to date unless told not to. The database is closed afterwards.
 */
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
      migrate: access.mode === "write" && access.migrate,
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

interface StoreMakers<S> {
  sqlite(database: ReturnType<typeof openDatabase>, config: Config): S;
  postgres(connection: ReturnType<typeof connect>): S;
}

/**
 * A store on the server's database (DATABASE_URL), whichever the engine, brought up to date
 * first; closed afterwards.
 */
async function withStore<S, T>(make: StoreMakers<S>, use: (store: S) => Promise<T>): Promise<T> {
  const config = loadConfig();
  if (config.database.engine === "sqlite") {
    return withDatabase({ mode: "write", migrate: true }, async (database) => {
      try {
        return await use(make.sqlite(database, config));
      } catch (error) {
        if (error instanceof StoreUnavailable && error.kind === "busy")
          throw new CommandError(
            `another process held the database's write lock for WRITE_LOCK_TIMEOUT_MS (${config.writeLockTimeoutMs} ms); nothing was changed, try again`,
          );
        throw error;
      }
    });
  }
  return withPostgres(config.database, async (connection) => {
    await migrate(connection.client);
    return use(make.postgres(connection));
  });
}

export const withTokenStore = <T>(use: (tokens: TokenStore) => Promise<T>): Promise<T> =>
  withStore(
    {
      sqlite: ({ sqlite }) => createSqliteTokenStore(sqlite),
      postgres: ({ client }) => createPostgresTokenStore(client),
    },
    use,
  );

export const withWebhookStore = <T>(use: (webhooks: WebhookStore) => Promise<T>): Promise<T> =>
  withStore(
    {
      // The server may hold the write lock: wait for it as the server's own writes do.
      sqlite: ({ sqlite }, config) =>
        createSqliteWebhookStore(
          sqlite,
          inThreadWriter(sqlite, WRITE_SQL, { lockTimeoutMs: config.writeLockTimeoutMs }),
          Date.now,
        ),
      postgres: ({ client }) => createPostgresWebhookStore(client, Date.now),
    },
    use,
  );

/** One connection to the PostgreSQL database, closed afterwards; failures worded for the operator. */
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
