import type { Plant } from "./plant";

export const CHANGE_TYPES = ["plant.created", "plant.updated", "plant.deleted"] as const;
export type ChangeType = (typeof CHANGE_TYPES)[number];

/** One entry of an owner's change log: the plant after the change (as it was, for a delete). */
export interface Change {
  seq: number;
  ownerId: number;
  type: ChangeType;
  /** When it was written, ms. */
  at: number;
  id: bigint;
  plant: Plant;
}

export interface ChangePage {
  changes: Change[];
  more: boolean;
  /** The owner's newest seq, kept or pruned (0 when the log never held one). */
  newest: number;
  /** The owner's newest pruned seq: a cursor before it has missed changes. */
  prunedThrough: number;
}

/** Every owner's change log, in one `seq` order; written by the plant store in each write's own transaction. */
export interface ChangeStore {
  /** Up to `count` of the owner's changes after `after`, oldest first, read after every change committed before the call. */
  read(ownerId: number, after: bigint, count: number): Promise<ChangePage>;
  /**
   * Up to `count` changes of any owner after `after`: the live feed's one read per wake-up, of what the writers
   * have stamped (PostgreSQL; `settle` first to read every change committed before).
   */
  readAll(after: number, count: number): Promise<Change[]>;
  /**
   * Resolves once every change committed before the call can be read (PostgreSQL stamps what waits).
   * `dispatcher`: woken by a stamp, it needs no more than the stamp a write here scheduled, if any.
   */
  settle(dispatcher?: boolean): Promise<void>;
  /** The newest seq of any owner: where the live feed starts. */
  newest(): Promise<number>;
  /** Removes up to `count` of the oldest changes written before `before` (ms), never the newest one. */
  prune(before: number, count: number): Promise<number>;
  /** `wake` is called when changes may have committed, on this instance or (PostgreSQL) another; resolves to a stop. */
  watch(wake: () => void): Promise<() => Promise<void>>;
}
