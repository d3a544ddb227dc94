// Creates with an Idempotency-Key (SPEC, "Retrying a create safely"): the answer is kept with the plant.

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
  /** ms since the epoch: the record's `created_at`. */
  at: number;
  /** A record made at or before this (ms) is neither replayed nor in the way. */
  expiredAt: number;
  /** The answer when the plant goes in (200), and when its id is taken (409). */
  created: KeptAnswer;
  taken: KeptAnswer;
}

/** `kept`: an earlier request's answer; `busy`: another request with the key is under way (another instance). */
export type KeyedOutcome =
  | { kind: "fresh"; answer: KeptAnswer }
  | { kind: "kept"; answer: KeptAnswer; requestHash: string }
  | { kind: "busy" };

/** A kept answer as both engines read it back, with the hash of the request it answered. */
export type KeptRow = Omit<KeptAnswer, "etag"> & { requestHash: string; etag: string | null };

export const keptAnswer = ({ status, body, etag }: KeptRow): KeptAnswer =>
  etag === null ? { status, body } : { status, body, etag };
