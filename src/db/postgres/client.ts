import { SQL } from "bun";
import type { DatabaseTarget } from "../../core/database";
import { StartupRefusal } from "../../core/failures";
import { compareMigrations, MIGRATIONS, type Migration, type MigrationStatus } from "../migrations";
import { MIGRATION_SQL } from "./queries";

export type PostgresTarget = Extract<DatabaseTarget, { engine: "postgres" }>;

/** drizzle/postgres as scripts/bundle-migrations.ts bundled it. */
export const EMBEDDED_MIGRATIONS: Migration[] = MIGRATIONS.postgres;

/** pg_advisory_lock's key for migrations: any constant every instance agrees on ("plants" in ASCII). */
const MIGRATION_LOCK = 0x706c616e7473;

/** Seconds a pooled connection may sit idle before it is closed. */
const IDLE_CLOSE_SECONDS = 10;

/**
 * A pool of at most `poolSize` connections, each with the statement timeout and JIT off. Bun's SQL client decodes int8 as a string by default
 * (Drizzle's `bigint` columns turn it into an exact bigint); its global `bigint: true` would also
 * make `count(*)` a bigint, so it stays off.
 *
 * Bun's pool opens all its connections at its first query, and all those closed at once when
 * none is free; it has no minimum size. So connections close after a short idle spell: an idle
 * instance soon holds only the one its background work (webhook polls, pings) keeps busy, and
 * the pool fills again as soon as requests need more than that.
 */
export function connect(target: PostgresTarget, poolSize = target.poolSize) {
  const client = new SQL(target.url, {
    max: poolSize,
    connectionTimeout: Math.ceil(target.connectTimeoutMs / 1000),
    idleTimeout: IDLE_CLOSE_SECONDS,
    // JIT never pays off for statements that read a page or write a group: it compiles for
    // milliseconds where they run in tens of microseconds, whenever a mis-estimate puts one
    // past jit_above_cost (the page statements' cap, plants.ts, keeps their estimates honest).
    connection: { statement_timeout: target.statementTimeoutMs, application_name: "plant-store", jit: "off" },
  });
  return { client };
}

/** Compares the database's migration rows with `migrations`, as SQLite's migrationStatus does. */
export async function migrationStatus(client: SQL, migrations = EMBEDDED_MIGRATIONS): Promise<MigrationStatus> {
  const [{ exists }] = (await client.unsafe(MIGRATION_SQL.tableExists, ["drizzle.__drizzle_migrations"])) as [
    { exists: boolean },
  ];
  const recorded = exists
    ? ((await client.unsafe(MIGRATION_SQL.recorded)) as Array<{ hash: string; createdAt: number }>)
    : [];
  return compareMigrations(recorded, migrations);
}

/**
 * Brings the schema up to date with Drizzle's own migrator, holding an advisory lock on one
 * reserved connection: Drizzle's migrator takes no lock, and instances starting together on an
 * empty database would each create the tables (`relation "plants" already exists`). A schema
 * that is not ours (tables with no migration rows) or newer than this version is refused.
 *
 * The status is read first without the lock: migrations are recorded in the transaction that
 * applies them, so a database whose rows show every migration applied needs nothing, and a start
 * on an up-to-date database (every start but the first) takes no lock.
 */
export async function migrate(client: SQL, migrations = EMBEDDED_MIGRATIONS): Promise<Migration[]> {
  const seen = await migrationStatus(client, migrations);
  if (seen.problems.length === 0 && seen.pending.length === 0) return [];
  const reserved = await client.reserve();
  try {
    await reserved.unsafe(MIGRATION_SQL.lock, [MIGRATION_LOCK]);
    try {
      const status = await migrationStatus(reserved, migrations);
      if (status.problems.length > 0) {
        throw new StartupRefusal(`the database's migrations disagree with this version: ${status.problems.join("; ")}`);
      }
      if (status.applied === 0) {
        const [{ exists }] = (await reserved.unsafe(MIGRATION_SQL.tableExists, ["public.plants"])) as [
          { exists: boolean },
        ];
        if (exists) {
          throw new StartupRefusal(
            "the database holds a plants table but no Plant Store migrations: it is not ours; give DATABASE_URL an empty database",
          );
        }
      }
      if (status.pending.length > 0) await applyMigrations(reserved, migrations);
      return status.pending;
    } finally {
      await reserved.unsafe(MIGRATION_SQL.unlock, [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    reserved.release();
  }
}

/**
 * Drizzle's migrator, on `connection`, loaded only when something is pending: Drizzle's pg-core
 * and driver took milliseconds of every start that loaded them.
 */
async function applyMigrations(connection: SQL, migrations: Migration[]): Promise<void> {
  const { drizzle } = await import("drizzle-orm/bun-sql");
  const { dialect, session } = drizzle({ client: connection }) as unknown as {
    dialect: { migrate(m: Migration[], s: unknown, c: object): Promise<void> };
    session: unknown;
  };
  await dialect.migrate(migrations, session, {});
}
