export const SYNCHRONOUS_MODES = ["OFF", "NORMAL", "FULL", "EXTRA"] as const;
export type SynchronousMode = (typeof SYNCHRONOUS_MODES)[number];

/** Where the data lives: a SQLite file (a path, or ":memory:"), or a PostgreSQL database. */
export type DatabaseTarget =
  | { engine: "sqlite"; path: string }
  | {
      engine: "postgres";
      url: string;
      /** Connections each instance keeps at most (DB_POOL_SIZE). */
      poolSize: number;
      /** How long opening a connection may take (DB_CONNECT_TIMEOUT_MS). */
      connectTimeoutMs: number;
      /** How long one statement may run before PostgreSQL cancels it (DB_STATEMENT_TIMEOUT_MS). */
      statementTimeoutMs: number;
    };

/** What opening the stores needs to know (a part of the service's configuration). */
export interface StoreConfig {
  database: DatabaseTarget;
  synchronous: SynchronousMode;
  /** Writes in flight past which new ones get 503 (MAX_IN_FLIGHT). */
  maxInFlight: number;
  /** How long a SQLite write waits for another process's write lock (WRITE_LOCK_TIMEOUT_MS). */
  writeLockTimeoutMs: number;
}
