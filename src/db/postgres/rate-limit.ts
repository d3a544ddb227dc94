import type { SQL } from "bun";
import { type FaultLog, faultDetail } from "../../core/fault";
import { type RateAnswer, rateAnswer } from "../../core/rate-limit";
import type { HotRead, RequestLimiter } from "../../core/stores";
import { systemTimers, type Timers } from "../../core/timers";
import type { Clock } from "../../core/tokens";
import { createGroups } from "./groups";

/**
 * Takes up to $2 from each bucket $1 (comma lists; $3 per minute, $4 now ms, $5 refill per ms), locked
 * in key order so instances never deadlock. A row another instance just created gets no answer: ask again.
 */
const LEASE_SQL = `WITH asked AS (
      SELECT key, n FROM unnest(string_to_array($1::text, ',')::int8[], string_to_array($2::text, ',')::int4[]) AS asked(key, n)
    ),
    held AS (
      SELECT key, tokens, updated_at FROM rate_limits WHERE key = ANY(ARRAY(SELECT key FROM asked)) ORDER BY key FOR UPDATE
    ),
    taken AS (
      SELECT held.key, bucket.refilled, LEAST(asked.n, floor(bucket.refilled))::int AS granted,
        GREATEST(held.updated_at, $4::float8) AS updated_at
      FROM held JOIN asked USING (key),
        LATERAL (SELECT LEAST($3::float8, held.tokens + GREATEST(0, $4::float8 - held.updated_at) * $5::float8) AS refilled) AS bucket
    ),
    spent AS (
      UPDATE rate_limits SET tokens = taken.refilled - taken.granted, updated_at = taken.updated_at
      FROM taken WHERE rate_limits.key = taken.key AND taken.granted > 0
    ),
    fresh AS (
      INSERT INTO rate_limits (key, tokens, updated_at)
      SELECT key, $3::float8 - LEAST(n, $3::float8), $4::float8 FROM asked WHERE key NOT IN (SELECT key FROM held)
      ON CONFLICT (key) DO NOTHING
      RETURNING key, tokens
    )
    SELECT key::float8 AS key, granted, refilled - granted AS tokens FROM taken
    UNION ALL SELECT key::float8, ($3::float8 - tokens)::int, tokens FROM fresh`;

/** An instance takes a key's budget from the shared bucket 1/SHARE_DIVISOR of a minute's worth at a time. */
const SHARE_DIVISOR = 100;
/** How long (ms) a request waits for the shared bucket before it goes ahead unchecked. */
export const LIMITER_WAIT_MS = 200;
/** Past this many keys in hand, those not being asked for are dropped (their shares with them). */
const SWEEP_ABOVE_KEYS = 10_000;

interface Lease {
  granted: number;
  tokens: number;
  at: number;
}

/** What this instance holds of one key's budget. */
interface Held {
  /** Taken from the shared bucket, not yet spent here. */
  tokens: number;
  /** Until then the shared bucket cannot have a whole token: no use asking. */
  refusedUntil: number;
  /** What the shared bucket held when it last answered, and when. */
  shared: number;
  seenAt: number;
  asking?: { since: number; answered: Promise<boolean> };
}

export interface LimiterOptions {
  log: FaultLog;
  waitMs?: number;
  timers?: Timers;
}

/**
 * The per-token budget shared by every instance, taken in shares spent in memory (decision 0007). It never stops
 * the service: a request waits at most `waitMs`, then goes ahead unchecked; a failed ask grants a share.
 */
export function createPostgresRateLimiter(
  client: SQL,
  perMinute: number,
  clock: Clock,
  { log, waitMs = LIMITER_WAIT_MS, timers = systemTimers }: LimiterOptions,
): RequestLimiter {
  if (perMinute === 0) return { take: () => undefined };
  const rate = perMinute / 60_000;
  const share = Math.max(1, Math.floor(perMinute / SHARE_DIVISOR));
  const held = new Map<number, Held>();
  /** Requests let through since the shared bucket stopped answering; undefined while it answers. */
  let unchecked: number | undefined;

  const leases = createGroups<number, Lease | undefined>(async (group) => {
    const keys = [...new Set(group.map((waiting) => waiting.item))];
    const answers = await lease(keys);
    // A key another instance has just given its first row: its row exists now, ask once more.
    const late = keys.filter((key) => !answers.has(key));
    if (late.length > 0) for (const [key, answer] of await lease(late)) answers.set(key, answer);
    for (const waiting of group) waiting.resolve(answers.get(waiting.item));
  });

  async function lease(keys: number[]): Promise<Map<number, Lease>> {
    const at = clock();
    const shares = keys.map(() => share).join(",");
    const params = [keys.join(","), shares, perMinute, at, rate];
    const rows = (await client.unsafe(LEASE_SQL, params)) as Array<Omit<Lease, "at"> & { key: number }>;
    return new Map(rows.map(({ key, granted, tokens }) => [key, { granted, tokens, at }]));
  }

  function trouble(what: string, detail: unknown) {
    if (unchecked !== undefined) return;
    unchecked = 0;
    log(`the shared rate limit ${what}: requests go ahead unchecked until it answers again`, detail);
  }

  function answered() {
    if (unchecked === undefined) return;
    log("the shared rate limit answers again", { uncheckedRequests: unchecked });
    unchecked = undefined;
  }

  function heldFor(key: number): Held {
    let found = held.get(key);
    if (found === undefined) {
      if (held.size >= SWEEP_ABOVE_KEYS) for (const [other, entry] of held) if (!entry.asking) held.delete(other);
      found = { tokens: 0, refusedUntil: Number.NEGATIVE_INFINITY, shared: perMinute, seenAt: clock() };
      held.set(key, found);
    }
    return found;
  }

  /** False when no answer came within `waitMs`. */
  function ask(key: number, entry: Held): Promise<boolean> {
    if (entry.asking) {
      return timers.now() - entry.asking.since >= waitMs ? Promise.resolve(false) : entry.asking.answered;
    }
    let done = false;
    const settled = leases
      .add(key)
      .then((answer) => {
        if (answer === undefined) throw new Error("the shared bucket did not answer for a key after two tries");
        entry.tokens += answer.granted;
        entry.shared = answer.tokens;
        entry.seenAt = answer.at;
        entry.refusedUntil = answer.tokens < 1 ? answer.at + (1 - answer.tokens) / rate : Number.NEGATIVE_INFINITY;
        answered();
      })
      .catch((error) => {
        entry.tokens += share;
        trouble("failed", faultDetail(error));
      })
      .finally(() => {
        done = true;
        entry.asking = undefined;
      });
    const answeredInTime = new Promise<boolean>((resolve) => {
      settled.then(() => resolve(true));
      // Not cleared when the answer comes first (Timers has no clearTimeout): it then does nothing.
      timers
        .setTimeout(() => {
          if (done) return;
          trouble(`gave no answer within ${waitMs} ms`, { key });
          resolve(false);
        }, waitMs)
        .unref();
    });
    entry.asking = { since: timers.now(), answered: answeredInTime };
    return answeredInTime;
  }

  function allowed(entry: Held): RateAnswer {
    const refill = Math.max(0, clock() - entry.seenAt) * rate;
    return rateAnswer(false, perMinute, Math.min(perMinute, entry.tokens + entry.shared + refill), rate);
  }

  // At once while this instance holds a share or knows the bucket is empty: only an ask waits.
  function take(key: number): HotRead<RateAnswer> {
    const entry = heldFor(key);
    if (entry.tokens >= 1) {
      entry.tokens -= 1;
      return allowed(entry);
    }
    const now = clock();
    if (now < entry.refusedUntil) {
      const resetSeconds = Math.max(1, Math.ceil((entry.refusedUntil - now) / 1000));
      return { refused: true, limit: perMinute, remaining: 0, resetSeconds };
    }
    return ask(key, entry).then((inTime) => {
      if (inTime) return take(key);
      if (unchecked !== undefined) unchecked++;
      return allowed(entry);
    });
  }

  return { take };
}
