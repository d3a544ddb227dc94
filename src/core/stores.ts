// What the app needs from a database, whatever the engine. Writes settle once durable.

import type { ChangeStore } from "./changes";
import type { StoreFailureKind } from "./failures";
import type { KeyedCreate, KeyedOutcome } from "./idempotency";
import type { NewPlant, Plant } from "./plant";
import type { RateAnswer } from "./rate-limit";
import type { WebhookStore } from "./webhooks";

export type * from "./webhooks";

import type { AuthenticatedUser, Clock, IssuedToken, TokenSpec } from "./tokens";

/** How many plants one step of a long list reads; about 30 KiB of JSON. */
export const LIST_CHUNK_SIZE = 1000;

export interface PlantFilter {
  after?: bigint;
  tag?: string;
}

export interface PlantPage {
  plants: Plant[];
  /** The plants' ids, in order, only when the list asked for them. */
  ids?: bigint[];
  lastId: bigint | undefined;
  more: boolean;
}

/** A field left out stays as it is; `tag: null` removes the tag. */
export type PlantChange = { [Field in keyof Plant]?: Plant[Field] | null };

/** A read of every list request, which SQLite answers at once (docs/decisions/0005-async-reads.md). */
export type HotRead<T> = T | Promise<T>;
export const andThen = <T, U>(read: HotRead<T>, next: (value: T) => HotRead<U>): HotRead<U> =>
  read instanceof Promise ? read.then(next) : next(read);

/** An owner's plants; every call is scoped to one owner. */
export interface PlantStore {
  readonly listChunkSize: number;
  /** Undefined when the owner already has a plant with this id. */
  createPlant(ownerId: number, plant: NewPlant): Promise<Plant | undefined>;
  /** The plant and its kept answer in one transaction; an unexpired record for the key is given back instead. */
  createPlantOnce(ownerId: number, plant: NewPlant, keyed: KeyedCreate): Promise<KeyedOutcome>;
  pruneIdempotencyKeys(before: number, count: number): Promise<number>;
  /** Up to `count` (≤ `listChunkSize`) matching plants by id, none past `upTo`, in one statement. */
  listPage(ownerId: number, filter: PlantFilter, count: number, upTo?: bigint, withIds?: boolean): HotRead<PlantPage>;
  /** The `count`-th matching plant's id (undefined when fewer match); walks the index in steps. */
  nthId(ownerId: number, filter: PlantFilter, count: number): Promise<{ id: bigint; more: boolean } | undefined>;
  getPlant(ownerId: number, id: bigint): Promise<Plant | undefined>;
  /**
   * Undefined when there is no such plant or, given `expected`, it is no longer that one: the
   * check is part of the write, so of two writes expecting the same plant only one succeeds.
   */
  updatePlant(ownerId: number, id: bigint, change: PlantChange, expected?: Plant): Promise<Plant | undefined>;
  /** True when the owner had the plant (equal to `expected`, when given) and it is gone now. */
  deletePlant(ownerId: number, id: bigint, expected?: Plant): Promise<boolean>;
}

export interface TokenListing {
  id: number;
  user: string;
  name: string;
  /** Scope bits (core/tokens.ts SCOPES). */
  scopes: number;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

/** Users and their bearer tokens; only hashes are stored. */
export interface TokenStore {
  /** Undefined for an unknown or revoked token. */
  authenticate(token: string): HotRead<AuthenticatedUser | undefined>;
  /** A new token for `userName` (the CLI), created with the user when needed. */
  issue(userName: string, spec?: TokenSpec): Promise<IssuedToken>;
  /** A new token for user `userId` (the API), unless MAX_TOKENS_PER_USER of theirs are unrevoked. */
  create(userId: number, spec: TokenSpec): Promise<(TokenListing & { token: string }) | "too-many">;
  /** A database that has never held a token gets one for `admin`, once. */
  bootstrap(): Promise<IssuedToken | undefined>;
  /** Every token, oldest first; or only user `userId`'s. */
  list(userId?: number): Promise<TokenListing[]>;
  /** With `userId`, another user's token is "not-found". */
  revoke(tokenId: number, userId?: number): Promise<"revoked" | "already-revoked" | "not-found">;
  /** Those of `tokenIds` that are still valid (neither revoked nor expired). */
  stillValid(tokenIds: number[]): Promise<Set<number>>;
}

export interface RequestLimiter {
  /** Undefined when there is no limit. */
  take(key: number): HotRead<RateAnswer | undefined>;
}

export interface StoreStatus {
  ping(): Promise<unknown>;
  /** Why writes are failing now (out of space, I/O, damage), if they are. */
  problem(): StoreFailureKind | undefined;
  /** SQLite: reads the whole file off the main thread; damage makes `problem()` "corrupt" until a restart. */
  checkInBackground(): void;
  figures: { databaseBytes(): number };
}

export interface Stores {
  engine: "sqlite" | "postgres";
  plants: PlantStore;
  tokens: TokenStore;
  webhooks: WebhookStore;
  changes: ChangeStore;
  status: StoreStatus;
  /** Per token: per process on SQLite (one process owns the file), shared by every instance on PostgreSQL. */
  requestLimiter(perMinute: number, clock: Clock): RequestLimiter;
  close(): Promise<void>;
}
