import { SQL } from "bun";
import type { DatabaseTarget } from "../../core/database";
import { StartupRefusal } from "../../core/failures";
import { applyMigrations, compareMigrations, MIGRATIONS, type Migration } from "../migrations";
import { MIGRATION_SQL } from "./queries";

export type PostgresTarget = Extract<DatabaseTarget, { engine: "postgres" }>;

export const EMBEDDED_MIGRATIONS: Migration[] = MIGRATIONS.postgres;

/** The migrations' advisory lock key ("plants" in ASCII). */
const MIGRATION_LOCK = 0x706c616e7473;

/** Seconds a pooled connection may sit idle before it is closed. */
const IDLE_CLOSE_SECONDS = 10;

/**
 * Bun's `bigint: true` would make `count(*)` a bigint too, so int8 stays decimal text. Bun's pool
 * has no minimum size and opens every connection at once: idle ones close soon instead.
 */
export function connect(target: PostgresTarget, poolSize = target.poolSize) {
  const client = new SQL(target.url, {
    max: poolSize,
    connectionTimeout: Math.ceil(target.connectTimeoutMs / 1000),
    idleTimeout: IDLE_CLOSE_SECONDS,
    // JIT compiles for milliseconds statements that run in microseconds, whenever one is mis-estimated.
    connection: { statement_timeout: target.statementTimeoutMs, application_name: "plant-store", jit: "off" },
  });
  return { client };
}

/** The `n` a counting statement (`SELECT count(*)::int AS n …`) answers. */
export async function countOf(runner: Pick<SQL, "unsafe">, sql: string, params?: unknown[]): Promise<number> {
  const [{ n }] = (await runner.unsafe(sql, params)) as [{ n: number }];
  return n;
}

const tableExists = async (runner: Pick<SQL, "unsafe">, name: string) =>
  ((await runner.unsafe(MIGRATION_SQL.tableExists, [name])) as [{ exists: boolean }])[0].exists;

export async function migrationStatus(client: SQL, migrations = EMBEDDED_MIGRATIONS) {
  const recorded = (await tableExists(client, "drizzle.__drizzle_migrations"))
    ? ((await client.unsafe(MIGRATION_SQL.recorded)) as Array<{ hash: string; createdAt: number }>)
    : [];
  return compareMigrations(recorded, migrations);
}

/**
 * Drizzle's migrator under an advisory lock, so instances starting together do not each create the
 * tables; an up-to-date database takes no lock. A schema not ours, or newer, is refused.
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
      if (status.applied === 0 && (await tableExists(reserved, "public.plants"))) {
        throw new StartupRefusal(
          "the database holds a plants table but no Plant Store migrations: it is not ours; give DATABASE_URL an empty database",
        );
      }
      if (status.pending.length > 0) await applyPending(reserved, migrations);
      return status.pending;
    } finally {
      await reserved.unsafe(MIGRATION_SQL.unlock, [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    reserved.release();
  }
}

/** Loaded only when something is pending: Drizzle's pg-core costs every start that loads it. */
async function applyPending(connection: SQL, migrations: Migration[]): Promise<void> {
  const { drizzle } = await import("drizzle-orm/bun-sql");
  await applyMigrations(drizzle({ client: connection }), migrations);
}
