/**
 * What the app needs from a database, whatever the engine: the app is built from these
 * (`createApp({ stores })`) and never sees a database handle. Every call answers with a promise
 * (docs/decisions/0005-async-reads.md); writes settle once durable.
 */

import type { StoreFailureKind } from "./failures";
import type { KeyedCreate, KeyedOutcome } from "./idempotency";
import type { NewPlant, Plant } from "./plant";
import type { RateAnswer } from "./rate-limit";
import type { WebhookStore } from "./webhooks";

export type * from "./webhooks";

import type { AuthenticatedUser, Clock, IssuedToken } from "./tokens";

/** What metrics read of the store. */
export interface StoreFigures {
  databaseBytes(): number;
}

/** How many plants one step of a long list reads; about 30 KiB of JSON. */
export const LIST_CHUNK_SIZE = 1000;

/** Which of an owner's plants a list wants: those after an id, those with a tag; both optional. */
export interface PlantFilter {
  after?: bigint;
  tag?: string;
}

/** One step of a list: its plants, the exact id of the last one, and whether more match past it. */
export interface PlantPage {
  plants: Plant[];
  /** The plants' ids, in the same order: only when the list asked for them. */
  ids?: bigint[];
  lastId: bigint | undefined;
  more: boolean;
}

/** What an update sets: a field left out stays as it is; `tag: null` removes the tag. */
export interface PlantChange {
  name?: string;
  tag?: string | null;
}

/** An owner's plants; every call is scoped to one owner. */
export interface PlantStore {
  /** How many plants one step of a long list reads. */
  readonly listChunkSize: number;
  /** The stored plant, or undefined when the owner already has one with this id. */
  createPlant(ownerId: number, plant: NewPlant): Promise<Plant | undefined>;
  /**
   * A create sent with an Idempotency-Key (core/idempotency.ts): the plant and its kept answer
   * go in one transaction, in the same groups as other creates; an unexpired record for the key
   * is given back instead, and nothing changes.
   */
  createPlantOnce(ownerId: number, plant: NewPlant, keyed: KeyedCreate): Promise<KeyedOutcome>;
  /** Removes up to `count` of the oldest idempotency records made before `before` (ms); how many went. */
  pruneIdempotencyKeys(before: number, count: number): Promise<number>;
  /**
   * Up to `count` (at most `listChunkSize`) of the owner's plants that match, by id, and
   * whether more match past them; `upTo` drops plants past that id. One statement: nothing
   * stays open between the steps of a long list. `withIds` adds the plants' ids (`fields=id`).
   */
  listPage(ownerId: number, filter: PlantFilter, count: number, upTo?: bigint, withIds?: boolean): Promise<PlantPage>;
  /**
   * The id of the `count`-th matching plant and whether more match past it; undefined when
   * fewer than `count` match. Walks the index in steps, letting other requests run between them.
   */
  nthId(ownerId: number, filter: PlantFilter, count: number): Promise<{ id: bigint; more: boolean } | undefined>;
  /** One of the owner's plants, or undefined when they have none with this id. */
  getPlant(ownerId: number, id: bigint): Promise<Plant | undefined>;
  /**
   * The plant after `change`, or undefined when the owner has none with this id or, given
   * `expected`, when the stored plant is no longer that one: the check is part of the write
   * (compare-and-set), so of two writes expecting the same plant only one succeeds.
   */
  updatePlant(ownerId: number, id: bigint, change: PlantChange, expected?: Plant): Promise<Plant | undefined>;
  /** True when the owner had the plant (equal to `expected`, when given) and it is gone now. */
  deletePlant(ownerId: number, id: bigint, expected?: Plant): Promise<boolean>;
}

/** A token as `token list` shows it: never its secret or hash. */
export interface TokenListing {
  id: number;
  user: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export type RevokeOutcome = "revoked" | "already-revoked" | "not-found";

/** Users and their bearer tokens; only hashes are stored. */
export interface TokenStore {
  /** The user behind a token, or undefined for an unknown or revoked one. */
  authenticate(token: string): Promise<AuthenticatedUser | undefined>;
  /** A new token for `userName`, created with the user when needed. */
  issue(userName: string): Promise<IssuedToken>;
  /** First start only: a database that has never held a token gets one for `admin`, once. */
  bootstrap(): Promise<IssuedToken | undefined>;
  list(): Promise<TokenListing[]>;
  /** "revoked", or why not: the caller turns that into its own message. */
  revoke(tokenId: number): Promise<RevokeOutcome>;
}

/** Counts requests per key (a token bucket: src/core/rate-limit.ts). */
export interface RequestLimiter {
  /** Counts a request for `key` unless refused; undefined when there is no limit. */
  take(key: number): Promise<RateAnswer | undefined>;
}

/** What readiness and metrics ask of the store. */
export interface StoreStatus {
  /** Runs a trivial query; throws (or rejects) when the database does not answer. */
  ping(): Promise<unknown>;
  /** Why writes are failing now (out of space, I/O, damage), if they are. */
  problem(): StoreFailureKind | undefined;
  /**
   * Once the service listens: reads the whole database off the main thread, and damage found
   * makes `problem()` "corrupt" until a restart (SQLite; PostgreSQL checks its own pages).
   */
  checkInBackground(): void;
  figures: StoreFigures;
}

export interface Stores {
  engine: "sqlite" | "postgres";
  plants: PlantStore;
  tokens: TokenStore;
  webhooks: WebhookStore;
  status: StoreStatus;
  /**
   * The per-token request limiter: per process on SQLite (one process owns the file), shared
   * by every instance on PostgreSQL. `perMinute` 0 turns it off.
   */
  requestLimiter(perMinute: number, clock: Clock): RequestLimiter;
  /** Ends the stores' work and closes the database. */
  close(): Promise<void>;
}

/**
 * Trims rows read with `LIMIT count + 1` (in place) to a page: at most `count`, none past
 * `upTo`; says whether more match past the page and which id ends it. `idOf` reads a row's id
 * (only of the rows at the page's end).
 */
export function trimToPage<Row>(
  rows: Row[],
  count: number,
  upTo: bigint | undefined,
  idOf: (row: Row) => bigint,
): { more: boolean; lastId: bigint | undefined } {
  let more = rows.length > count;
  if (more) rows.pop();
  if (upTo !== undefined && rows.length > 0 && idOf(rows.at(-1) as Row) > upTo) {
    while (rows.length > 0 && idOf(rows.at(-1) as Row) > upTo) rows.pop();
    more = false;
  }
  const last = rows.at(-1);
  return { more, lastId: last === undefined ? undefined : idOf(last) };
}
