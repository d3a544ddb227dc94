// Engine errors sorted into kinds; src/http/errors.ts turns each kind into a status and message.
export type StoreFailureKind = "capacity" | "busy" | "full" | "io" | "corrupt" | "unreachable" | "timeout";

/** A write or read the store could not do for a reason of its own, not of the request's. */
export class StoreUnavailable extends Error {
  constructor(
    readonly kind: StoreFailureKind,
    options?: { cause?: unknown },
  ) {
    super(`store unavailable: ${kind}`, options);
  }
}

// SQLite's primary result codes (the extended ones, e.g. SQLITE_IOERR_WRITE, share the prefix).
const SQLITE_KINDS: Array<[prefix: string, kind: StoreFailureKind]> = [
  ["SQLITE_BUSY", "busy"],
  ["SQLITE_LOCKED", "busy"],
  ["SQLITE_FULL", "full"],
  ["SQLITE_IOERR", "io"],
  ["SQLITE_CANTOPEN", "io"],
  ["SQLITE_READONLY", "io"],
  ["SQLITE_CORRUPT", "corrupt"],
  ["SQLITE_NOTADB", "corrupt"],
];

// PostgreSQL's SQLSTATE codes (Bun's SQL client gives them as `errno`), by class or whole code.
const POSTGRES_STATES: Array<[prefix: string, kind: StoreFailureKind]> = [
  ["08", "unreachable"], // connection exception
  ["57P", "unreachable"], // the server is shutting down or starting up
  ["53300", "unreachable"], // too many connections
  ["57014", "busy"], // statement timeout (or a cancel)
  ["55P03", "busy"], // lock not available
  ["40001", "busy"], // serialization failure
  ["40P01", "busy"], // deadlock
  ["53100", "full"], // disk full
  ["53", "capacity"], // out of memory or other resources
  ["58", "io"], // system error, I/O
  ["XX001", "corrupt"], // data corrupted
  ["XX002", "corrupt"], // index corrupted
];

/** Bun's own codes for a connection that failed or went away (refused, closed, timed out…). */
const POSTGRES_CONNECTION_CODE = /^ERR_POSTGRES_(?!SERVER_ERROR|SYNTAX|INVALID_|UNSUPPORTED|QUERY|NOT_TAGGED)/;

/** `error` and the errors it wraps, outermost first (Drizzle wraps the driver's error as its cause). */
function* causeChain(error: unknown): Generator<Error> {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) yield e;
}

export function storeFailureKind(error: unknown): StoreFailureKind | undefined {
  for (const e of causeChain(error)) {
    if (e instanceof StoreUnavailable) return e.kind;
    const { code } = e as { code?: unknown };
    if (typeof code === "string") {
      for (const [prefix, kind] of SQLITE_KINDS) if (code.startsWith(prefix)) return kind;
      const state = code === "ERR_POSTGRES_SERVER_ERROR" ? postgresState(e) : undefined;
      if (state !== undefined) {
        for (const [prefix, kind] of POSTGRES_STATES) if (state.startsWith(prefix)) return kind;
      } else if (POSTGRES_CONNECTION_CODE.test(code)) return "unreachable";
    }
  }
  return undefined;
}

/** The SQLSTATE behind a failed PostgreSQL statement (Bun's SQL client gives it as `errno`). */
export function postgresState(error: unknown): string | undefined {
  for (const e of causeChain(error)) {
    const { errno } = e as { errno?: unknown };
    if (typeof errno === "string") return errno;
  }
  return undefined;
}

/** A database the service must not use (someone else's, an unknown migration history): one line, exit 1. */
export class StartupRefusal extends Error {}
