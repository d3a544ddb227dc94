import type { Database } from "bun:sqlite";

/**
 * Every write the server makes on SQLite, by name, with its arguments and its result. A write
 * is one statement (group commit's rule: a failing write undoes itself alone), and it is named
 * rather than a closure so that it can be sent to the writer thread (writer-worker.ts).
 */
export interface Writes {
  insertPlant(
    ownerId: number,
    id: bigint,
    name: string,
    tag: string | null,
  ): { name: string; tag: string | null } | null;
  deletePlant(ownerId: number, id: bigint): { ownerId: number } | null;
  touchToken(lastUsedAt: number, tokenId: number): void;
  /** The count and the insert are one statement: one writer at a time, so the cap holds. */
  registerWebhook(
    ownerId: number,
    url: string,
    secret: string,
    createdAt: number,
    max: number,
  ): { id: number; url: string; createdAt: number; disabledAt: number | null } | null;
  removeWebhook(ownerId: number, id: number): { id: number } | null;
  claimDeliveries(
    leaseUntil: number,
    now: number,
    count: number,
  ): Array<{ seq: number; id: string; webhookId: number; payload: string; attempts: number }>;
  recordAttempt(
    deliverySeq: number,
    attempt: number,
    at: number,
    statusCode: number | null,
    durationMs: number,
    error: string | null,
    outcome: string,
    retryInMs: number | null,
  ): void;
  redeliver(now: number, deliveryId: string): { status: string } | null;
  /** Rewrites page 1 with the value it holds: a real write that changes nothing (a health probe). */
  probe(): void;
}

export type WriteName = keyof Writes;
export type WriteArgs<N extends WriteName> = Parameters<Writes[N]>;
export type WriteResult<N extends WriteName> = ReturnType<Writes[N]>;

/** How a statement's result is read: its first row, all rows, or nothing. */
type Mode = "get" | "all" | "run";

/** A write's SQL, with `?NNN` or positional parameters in the order of its arguments. */
export type WriteSql = Record<Exclude<WriteName, "probe">, { sql: string; mode: Mode }>;

export type WriteRunner = <N extends WriteName>(name: N, args: WriteArgs<N>) => WriteResult<N>;

/**
 * Prepares every write on `sqlite` once and returns the function that runs one by name; it
 * imports nothing but bun:sqlite's types, so the writer thread loads no ORM.
 */
export function prepareWrites(sqlite: Database, texts: WriteSql): WriteRunner {
  const prepared = new Map(
    Object.entries(texts).map(([name, { sql: text, mode }]) => [name, { statement: sqlite.prepare(text), mode }]),
  );
  const userVersion = sqlite.prepare<{ user_version: number }, []>("PRAGMA user_version");
  return ((name: WriteName, args: unknown[]) => {
    if (name === "probe") {
      sqlite.run(`PRAGMA user_version = ${userVersion.get()?.user_version ?? 0}`);
      return undefined;
    }
    const entry = prepared.get(name);
    if (!entry) throw new Error(`no write named ${name}`);
    const bound = args as Array<string | number | bigint | null>;
    if (entry.mode === "all") return entry.statement.all(...bound);
    if (entry.mode === "get") return entry.statement.get(...bound);
    entry.statement.run(...bound);
    return undefined;
  }) as WriteRunner;
}
