import { ConfigError, type Env, integerSetting } from "./settings";

export const SYNCHRONOUS_MODES = ["OFF", "NORMAL", "FULL", "EXTRA"] as const;
export type SynchronousMode = (typeof SYNCHRONOUS_MODES)[number];

export type DatabaseTarget = ReturnType<typeof databaseFrom>;

/** The part of the configuration that opening the stores needs (settings: src/config.ts). */
export interface StoreConfig {
  database: DatabaseTarget;
  synchronous: SynchronousMode;
  maxInFlight: number;
  writeLockTimeoutMs: number;
}

/** `file:` URLs and plain paths both name a SQLite file; ":memory:" keeps everything in RAM. */
export function databasePathFrom(url: string): string {
  if (url === ":memory:" || url === "file::memory:") return ":memory:";
  if (url.startsWith("file://")) return new URL(url).pathname;
  if (url.startsWith("file:")) return url.slice("file:".length).split("?")[0] ?? "";
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new ConfigError("DATABASE_URL must be a SQLite path, a file: URL, :memory: or a postgres:// URL");
  }
  return url;
}

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i;

/** The URL as messages show it: never its password. */
export function withoutPassword(url: string): string {
  const parsed = URL.parse(url);
  if (!parsed) return "the PostgreSQL URL";
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

export function databaseFrom(env: Env) {
  const url = env.DATABASE_URL?.trim() || "./data/plants.sqlite";
  if (!POSTGRES_URL.test(url)) {
    const path = databasePathFrom(url);
    if (path === "") throw new ConfigError("DATABASE_URL must not be empty");
    return { engine: "sqlite" as const, path };
  }
  const parsed = URL.parse(url);
  if (!parsed) throw new ConfigError("DATABASE_URL is not a valid postgres:// URL");
  if (!parsed.hostname && !parsed.searchParams.get("host")) {
    throw new ConfigError("DATABASE_URL must name the PostgreSQL host: postgres://user:password@host:5432/database");
  }
  return {
    engine: "postgres" as const,
    url,
    poolSize: integerSetting(env, "DB_POOL_SIZE", 10, 1, 1000),
    connectTimeoutMs: integerSetting(env, "DB_CONNECT_TIMEOUT_MS", 5_000, 100, 600_000),
    statementTimeoutMs: integerSetting(env, "DB_STATEMENT_TIMEOUT_MS", 10_000, 100, 3_600_000),
  };
}
