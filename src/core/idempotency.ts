/**
 * Creates sent with an `Idempotency-Key` (SPEC, "Retrying a create safely"): the answer a
 * create gives is kept with the plant, in its own transaction, and given again to a retry.
 */

/** An answer as kept: its status, its exact body, and its ETag when it had one. */
export interface KeptAnswer {
  status: number;
  body: string;
  etag?: string;
}

/** What a keyed create gives the store besides the plant. */
export interface KeyedCreate {
  key: string;
  /** SHA-256 of the request, hex: a retry must send the same one. */
  requestHash: string;
  /** Now, in ms since the epoch: the record's `created_at`. */
  at: number;
  /** A record made at or before this (ms) has expired: it is neither replayed nor in the way. */
  expiredAt: number;
  /** The answer when the plant goes in (200), and when the owner already has its id (409). */
  created: KeptAnswer;
  taken: KeptAnswer;
}

/**
 * `fresh`: this request made the plant (or found its id taken) and its answer is now kept.
 * `kept`: an earlier request with the key was answered; here is that answer and its request's
 * hash. `busy`: another request with the key is being processed (on another instance).
 */
export type KeyedOutcome =
  | { kind: "fresh"; answer: KeptAnswer }
  | { kind: "kept"; answer: KeptAnswer; requestHash: string }
  | { kind: "busy" };

/** A kept record's row as both engines read it back. */
export interface KeptRow {
  requestHash: string;
  status: number;
  body: string;
  etag: string | null;
}

export const keptAnswer = ({ status, body, etag }: KeptRow): KeptAnswer =>
  etag === null ? { status, body } : { status, body, etag };
