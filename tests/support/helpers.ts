import { Database } from "bun:sqlite";
import { afterEach, beforeEach, expect } from "bun:test";
import { SQL } from "bun";
import { type AppConfig, type AppOps, createApp, createOps } from "../../src/app";
import type { FaultLog } from "../../src/core/fault";
import type { Stores } from "../../src/core/stores";
import { connect, migrate } from "../../src/db/postgres/client";
import { createPostgresPlantStore } from "../../src/db/postgres/plants";
import { createPostgresStores, guardOf } from "../../src/db/postgres/stores";
import { type AppDatabase, openDatabase } from "../../src/db/sqlite/client";
import { createSqliteStores } from "../../src/db/sqlite/stores";
import type { Resolver } from "../../src/webhooks/send";
import { until } from "./until";
import { userWithToken } from "./users";

export const BASE = "http://localhost";

/** Which engine the in-process tests run on: `TEST_DATABASE=postgres` (with `TEST_DATABASE_URL`) or SQLite. */
export const ENGINE: "sqlite" | "postgres" = process.env.TEST_DATABASE === "postgres" ? "postgres" : "sqlite";
export const onSqlite = ENGINE === "sqlite";
export const onPostgres = ENGINE === "postgres";

/** Stores opened by a test: closed after it (tests/setup.ts), so connections never pile up. */
export const openedStores = new Set<Stores>();

let admin: SQL | undefined;
let templateReady: Promise<string> | undefined;
/** The template's schema digest (shapeOf): a database handed out again must still have it. */
let templateShape: string | undefined;
/** The statement that puts the sequences of a database of the template's shape back at their start. */
let restartSequences: string | undefined;
let databases = 0;

function clusterUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error("TEST_DATABASE=postgres needs TEST_DATABASE_URL (bun run test provides both)");
  return url;
}

/**
 * One connection to the cluster's `postgres` database for the helpers' own statements (CREATE
 * DATABASE, who is connected where), kept for the run: a new connection costs about as much as
 * a database copy on a busy machine. Closed at the end (tests/support/setup.ts).
 */
function adminSession(): SQL {
  admin ??= new SQL(clusterUrl(), { max: 1 });
  return admin;
}

export async function closeAdminSession(): Promise<void> {
  const session = admin;
  admin = undefined;
  await session?.close();
}

/** A migrated template database, made once per test process; each test copies it (about 70 ms). */
function postgresTemplate(): Promise<string> {
  templateReady ??= (async () => {
    const url = clusterUrl();
    const name = `plants_template_${process.pid}`;
    await adminSession().unsafe(`DROP DATABASE IF EXISTS ${name}`);
    await adminSession().unsafe(`CREATE DATABASE ${name}`);
    const target = postgresTarget(withDatabaseName(url, name));
    const { client } = connect(target, 1);
    await migrate(client);
    templateShape = await shapeOf(client);
    [{ script: restartSequences }] = (await client.unsafe(RESTART_SEQUENCES_SQL)) as [{ script: string }];
    await client.close();
    return name;
  })();
  return templateReady;
}

function withDatabaseName(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/** The pool of the stores freshStores opens on PostgreSQL (the service's default is 10). */
const TEST_POOL_SIZE = 4;

export function postgresTarget(url: string) {
  return { engine: "postgres" as const, url, poolSize: 10, connectTimeoutMs: 5_000, statementTimeoutMs: 10_000 };
}

/**
 * `client`, with every statement sent through its `unsafe` (the stores' hot paths, and Drizzle's
 * own queries) pushed onto `sent`, text and parameters as sent.
 */
export function recordingClient(client: SQL, sent: SentStatement[]): SQL {
  return new Proxy(client, {
    get(target, key) {
      if (key === "unsafe")
        return (sql: string, params: unknown[]) => {
          sent.push({ sql, params });
          return target.unsafe(sql, params);
        };
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

export type SentStatement = { sql: string; params: unknown[] };

/**
 * A pool of 4 on a fresh PostgreSQL database, the same pool with its statements recorded in
 * `sent` (`recording`) (for the stores' grouping tests), and two users' ids, a and b.
 */
export async function recordedPostgres() {
  const { client } = connect(postgresTarget(await freshPostgresDatabase()), 4);
  const sent: SentStatement[] = [];
  const recording = recordingClient(client, sent);
  const rows = (await client`
    INSERT INTO users (name, created_at) VALUES ('a', now()), ('b', now()) RETURNING id`) as Array<{ id: number }>;
  return { client, sent, recording, owners: rows.map((row) => row.id) as [number, number] };
}

export type RecordedPlantStore = Awaited<ReturnType<typeof recordedPostgres>> & {
  plants: ReturnType<typeof createPostgresPlantStore>;
};

/**
 * For a describe of the grouping tests of pages and writes: before each test, recordedPostgres()
 * with a plant store on its recorded handle, seeded by `seed`; its pool closed after the test.
 * The object returned holds the current test's parts.
 */
export function eachRecordedPlantStore(seed: (store: RecordedPlantStore) => Promise<unknown>): RecordedPlantStore {
  const current = {} as RecordedPlantStore;
  beforeEach(async () => {
    const recorded = await recordedPostgres();
    Object.assign(current, recorded, { plants: createPostgresPlantStore(recorded.recording) });
    await seed(current);
  });
  afterEach(async () => {
    await current.client.close();
  });
  return current;
}

/**
 * Databases of tests that are over, which nothing is connected to any more: freshStores hands
 * them out again, emptied, before it makes a new copy. A copy (CREATE DATABASE, then the first
 * connections to it, which build its catalog caches) costs several times what emptying one does.
 */
const reusable: string[] = [];
/** The database of each store freshStores opened, offered for reuse once the test has closed the store. */
const databaseOf = new WeakMap<Stores, string>();

/**
 * A digest of a database's schema: its relations (and their column types), constraints, triggers,
 * functions (with their bodies) and settings. A test that changed any of them (a refusing trigger,
 * a dropped table, a replaced trigger function) leaves a database that is not handed out again.
 */
const SHAPE_SQL = `
  SELECT md5(coalesce(string_agg(item, ',' ORDER BY item), '')) AS shape FROM (
    SELECT format('%s %s %s', c.relname, c.relkind, c.relnatts) FROM pg_class c
      WHERE c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)
    UNION ALL SELECT format('%s %s %s', attrelid::regclass, attname, atttypid) FROM pg_attribute
      WHERE attnum > 0 AND NOT attisdropped
        AND attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace)
    UNION ALL SELECT format('%s %s', conname, pg_get_constraintdef(oid)) FROM pg_constraint
      WHERE connamespace = 'public'::regnamespace
    UNION ALL SELECT format('%s %s %s', tgname, tgrelid::regclass, tgenabled) FROM pg_trigger
    UNION ALL SELECT format('%s %s %s', proname, pronargs, md5(prosrc)) FROM pg_proc
      WHERE pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
    UNION ALL SELECT array_to_string(setconfig, ' ') FROM pg_db_role_setting
      WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  ) items(item)`;

/**
 * The tables a test wrote to: any that has a page. Those are truncated (with the tables that
 * refer to them, which TRUNCATE requires), which leaves them as a
 * copy of the template has them, rows in insertion order included (a DELETE would let new rows
 * take the freed space, and queries without a full ORDER BY would see another order).
 */
const USED_TABLES_SQL = `
  SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') AS tables FROM pg_tables
  WHERE schemaname = 'public' AND pg_relation_size(format('%I.%I', schemaname, tablename)) > 0`;

/** What puts every sequence back at its start, as the template has it (a failed insert may have moved one). */
const RESTART_SEQUENCES_SQL = `
  SELECT 'SELECT ' || string_agg(format('setval(%L, %s, false)', format('%I.%I', schemaname, sequencename), start_value), ', ')
    AS script FROM pg_sequences WHERE schemaname = 'public'`;

async function shapeOf(session: SQL): Promise<string> {
  return ((await session.unsafe(SHAPE_SQL)) as [{ shape: string }])[0].shape;
}

/**
 * After the test that used it has closed `stores`: offers their database for reuse, once no
 * connection to it is left (a session the test forgot could otherwise write into the next test's
 * data). One still connected a moment later is left behind.
 */
export async function offerForReuse(stores: Stores): Promise<void> {
  const name = databaseOf.get(stores);
  if (name === undefined) return;
  databaseOf.delete(stores);
  const connected = async () =>
    (
      (await adminSession()`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${name}`) as [{ n: number }]
    )[0].n;
  // A closed pool's server processes take a moment to go.
  const left = await until(connected, { holds: (n) => n === 0, timeoutMs: 500, intervalMs: 10 }).catch(() => 1);
  if (left === 0) reusable.push(name);
}

/**
 * Empties a database a test left for reuse (as a copy of the template has it: no rows,
 * sequences at their start) through the pool the next test will use; false, leaving it as it was, if its schema is
 * no longer the template's or a lock is still held on it.
 */
async function emptied(pool: SQL): Promise<boolean> {
  try {
    if ((await shapeOf(pool)) !== templateShape) return false;
    await pool.begin(async (tx) => {
      // Never wait on a lock something left behind: such a database is left behind too.
      await tx`SET LOCAL lock_timeout = '2s'`;
      const [{ tables }] = (await tx.unsafe(USED_TABLES_SQL)) as [{ tables: string | null }];
      if (tables !== null) await tx.unsafe(`TRUNCATE ${tables} CASCADE`);
      await tx.unsafe(restartSequences as string);
    });
    return true;
  } catch {
    return false;
  }
}

/** A pool on a migrated database with no rows: one a test left for reuse, emptied, else a new copy. */
async function emptyPool(target: ReturnType<typeof postgresTarget>): Promise<SQL> {
  for (let name = reusable.pop(); name !== undefined; name = reusable.pop()) {
    target.url = withDatabaseName(clusterUrl(), name);
    const { client } = connect(target);
    if (await emptied(client)) return client;
    await client.close();
  }
  target.url = await freshPostgresDatabase();
  return connect(target).client;
}

/** A fresh, migrated PostgreSQL database copied from the template; its URL. */
export async function freshPostgresDatabase(): Promise<string> {
  const template = await postgresTemplate();
  const url = clusterUrl();
  const name = `plants_test_${process.pid}_${++databases}`;
  await adminSession().unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  return withDatabaseName(url, name);
}

/** A fresh, empty PostgreSQL database (no schema at all) on the test cluster; its URL. */
export async function emptyPostgresDatabase(): Promise<string> {
  const name = `plants_empty_${process.pid}_${++databases}`;
  await adminSession().unsafe(`CREATE DATABASE ${name}`);
  return withDatabaseName(clusterUrl(), name);
}

/** Stores on a fresh database of the engine under test. */
export async function freshStores(options: {
  clock: () => number;
  log: FaultLog;
  maxQueued: number;
  lockTimeoutMs: number;
  statementTimeoutMs?: number;
  /** On PostgreSQL, how long a request waits for the shared rate-limit bucket (the default lets it go ahead after 200 ms). */
  limiterWaitMs?: number;
  /** On PostgreSQL, what the stores get in place of their pool (a proxy that fails some statements). */
  wrapPostgresClient?: (client: SQL) => SQL;
}) {
  if (onPostgres) {
    // Bun opens a pool's every connection at its first query, and a connection costs a server
    // process: ten per test were most of a test's time on a busy machine. Four still let a
    // test's requests overlap, and the deadline guard is told the same size (guardOf).
    const target = { ...postgresTarget(""), poolSize: TEST_POOL_SIZE };
    if (options.statementTimeoutMs !== undefined) target.statementTimeoutMs = options.statementTimeoutMs;
    const pool = await emptyPool(target);
    const client = options.wrapPostgresClient?.(pool) ?? pool;
    const stores = createPostgresStores(client, { ...options, ...guardOf(target), maxInFlight: options.maxQueued });
    openedStores.add(stores);
    databaseOf.set(stores, new URL(target.url).pathname.slice(1));
    return {
      stores,
      sqlite: undefined as unknown as Database,
      db: undefined as unknown as AppDatabase,
      postgresUrl: target.url,
    };
  }
  const { sqlite, db } = openDatabase({ path: ":memory:", synchronous: "FULL" });
  const stores = createSqliteStores(sqlite, options);
  openedStores.add(stores);
  return { stores, sqlite, db, postgresUrl: undefined };
}

/**
 * A fresh app on its own migrated database (in memory on SQLite, a copy of the migrated
 * template on PostgreSQL); rate limiting off unless asked for. `sqlite` and `db` exist on SQLite
 * only, for the tests that are about that engine.
 */
export async function makeTestApp(
  options: Partial<
    AppConfig & { maxInFlight: number; writeLockTimeoutMs: number; statementTimeoutMs: number; limiterWaitMs: number }
  > & {
    now?: () => number;
    logWith?: (ops: AppOps) => FaultLog;
    resolveWebhookHost?: Resolver;
    wrapPostgresClient?: (client: SQL) => SQL;
    /** What the app gets in place of its stores (e.g. a plant store whose writes can be held). */
    wrapStores?: (stores: Stores) => Stores;
  } = {},
) {
  const logged: Array<{ message: string; detail: unknown }> = [];
  const clock = options.now ?? Date.now;
  let log: FaultLog = (message, detail) => logged.push({ message, detail });
  const { stores, sqlite, db, postgresUrl } = await freshStores({
    clock,
    log: (message, detail, request) => log(message, detail, request),
    maxQueued: options.maxInFlight ?? 1024,
    lockTimeoutMs: options.writeLockTimeoutMs ?? 5_000,
    statementTimeoutMs: options.statementTimeoutMs,
    // Counts are under test: a busy machine must not let a request go ahead unasked (fail-open
    // tests ask for the service's own wait).
    limiterWaitMs: options.limiterWaitMs ?? 60_000,
    wrapPostgresClient: options.wrapPostgresClient,
  });
  const ops = createOps(stores);
  if (options.logWith) log = options.logWith(ops);
  const app = createApp({
    stores: options.wrapStores?.(stores) ?? stores,
    config: {
      bodyLimitBytes: options.bodyLimitBytes ?? 64 * 1024,
      bodyTimeoutMs: options.bodyTimeoutMs ?? 10_000,
      rateLimitPerMinute: options.rateLimitPerMinute ?? 0,
      authFailuresPerMinute: options.authFailuresPerMinute ?? 0,
      trustProxy: options.trustProxy ?? [],
      corsOrigins: options.corsOrigins ?? [],
      swaggerPersistAuthorization: options.swaggerPersistAuthorization ?? false,
      webhookAllowPrivate: options.webhookAllowPrivate ?? false,
      idempotencyTtlHours: options.idempotencyTtlHours ?? 24,
      changeStreamsPerToken: options.changeStreamsPerToken ?? 5,
      maxChangeStreams: options.maxChangeStreams ?? 1000,
    },
    resolveWebhookHost: options.resolveWebhookHost,
    clock,
    log: (message, detail, request) => log(message, detail, request),
    ops,
  });
  const tokens = stores.tokens;

  /** Sends a request; `token` becomes the Authorization header, `json` the JSON body. */
  async function call(
    method: string,
    path: string,
    init: { token?: string; json?: unknown; body?: RequestInit["body"]; headers?: Record<string, string> } = {},
  ) {
    const headers: Record<string, string> = { ...init.headers };
    if (init.token !== undefined) headers.authorization = `Bearer ${init.token}`;
    let body = init.body;
    if (init.json !== undefined) {
      body = typeof init.json === "string" ? init.json : JSON.stringify(init.json);
      headers["content-type"] ??= "application/json";
    }
    return app.handle(new Request(`${BASE}${path}`, { method, headers, body }));
  }

  return {
    app,
    stores,
    sqlite,
    db,
    /** On PostgreSQL, the test's own database, for a second session (e.g. one holding a lock). */
    postgresUrl,
    tokens,
    logged,
    ops,
    call,
    /** Creates a plant from raw JSON, so ids past 2^53 stay exact, and expects the 200. */
    async createPlant(id: string, name: string, token: string) {
      const response = await call("POST", "/plants", { token, json: `{"id":${id},"name":${JSON.stringify(name)}}` });
      expect(response.status).toBe(200);
    },
    /** Issues a token for `user` (created if needed) and returns the secret. */
    // Only issued: authenticating would record a last use (tests/engines/tokens.test.ts reads it).
    tokenFor: async (user: string) => (await tokens.issue(user)).token,
    /** A user (created if needed) with a new token: name, id and token. */
    user: (name = "alice") => userWithToken(tokens, name),
  };
}

export type TestApp = Awaited<ReturnType<typeof makeTestApp>>;

/**
 * An error response: the status, a JSON content type, and exactly the Error body's two fields
 * with a non-blank message. Returns the message.
 */
export async function expectError(response: Response, status: number): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json\b/);
  const body = (await response.json()) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(["error", "message"]);
  expect(body.error).toBe(status);
  expect(typeof body.message).toBe("string");
  expect((body.message as string).trim().length).toBeGreaterThan(0);
  return body.message as string;
}

/**
 * A database that is ours by its (empty) migrations table, with a plants table of another shape
 * in the way: the first migration fails on it.
 */
export function writeClashingDatabase(path: string): void {
  const clashing = new Database(path);
  clashing.run("CREATE TABLE __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)");
  clashing.run("CREATE TABLE plants (something_else TEXT)");
  clashing.run("INSERT INTO plants VALUES ('keep me')");
  clashing.close();
}

/** Status, the headers a replayed create must repeat, and the exact body (Idempotency-Key tests). */
export async function keptAnswer(response: Response) {
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    etag: response.headers.get("etag"),
    replayed: response.headers.get("idempotent-replayed"),
    body: await response.text(),
  };
}
