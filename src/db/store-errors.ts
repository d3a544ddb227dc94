/**
 * What a failing store means for a client, whatever the engine: the engine's errors are sorted
 * into these kinds here, and src/http/errors.ts turns each kind into its status and message.
 */
export type StoreFailureKind = "capacity" | "busy" | "full" | "io" | "corrupt";

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

/** The kind of store failure behind `error` (Drizzle wraps the driver's error as its cause). */
export function storeFailureKind(error: unknown): StoreFailureKind | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof StoreUnavailable) return e.kind;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") {
      for (const [prefix, kind] of SQLITE_KINDS) if (code.startsWith(prefix)) return kind;
    }
  }
  return undefined;
}
