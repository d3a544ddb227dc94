import type { ChangeStore } from "../core/changes";
import { type FaultLog, faultDetail } from "../core/fault";
import { INT64_MAX } from "../core/plant";
import type { TokenStore } from "../core/stores";
import { systemTimers, type Timers } from "../core/timers";
import { HttpError } from "../http/errors";
import { gone } from "./model";
import { ChangeStream, eventBytes } from "./stream";

/** Changes read per statement by the feed's read per wake-up. */
const PAGE = 1000;
/** A stream's backlog is read this many at a time, each page once its reader has room for it. */
const CATCH_UP_PAGE = 200;
/** A comment line after this long without an event (SPEC: at least every 15 s). */
const HEARTBEAT_MS = 10_000;
/** How often the tokens of open streams are checked (SPEC: a revoked one's streams end within 5 s). */
const TOKEN_CHECK_MS = 2_500;
/** The slow poll beside the wake-ups: another process's writes, a missed notification. */
const POLL_MS = 1_000;
/** A reader this far behind is closed; it resumes with Last-Event-ID. */
const MAX_BEHIND_BYTES = 1024 * 1024;
const OPENED = new TextEncoder().encode(": ok\n\n");
const RETRY = { "retry-after": "5" };

export interface FeedOptions {
  store: ChangeStore;
  tokens: Pick<TokenStore, "stillValid">;
  log: FaultLog;
  /** CHANGE_STREAMS_PER_TOKEN and MAX_CHANGE_STREAMS. */
  perToken: number;
  max: number;
  timers?: Timers;
}

/**
 * The live side of the change log: open streams by owner, and one read of the log per wake-up (a
 * commit here, a notification from another instance, or the slow poll) fanned out to them all.
 */
export function createChangeFeed({ store, tokens, log, perToken, max, timers = systemTimers }: FeedOptions) {
  const byOwner = new Map<number, Set<ChangeStream>>();
  const byToken = new Map<number, number>();
  let open = 0;
  /** The newest seq the feed has read. */
  let cursor = 0;
  let started: Promise<void> | undefined;
  let stopWatching: (() => Promise<void>) | undefined;
  let reading = false;
  let again = false;
  let failing = false;
  let stopped = false;
  let checkedAt = 0;

  const count = (tokenId: number, by: number) => {
    const n = (byToken.get(tokenId) ?? 0) + by;
    if (n === 0) byToken.delete(tokenId);
    else byToken.set(tokenId, n);
  };

  function forget(stream: ChangeStream) {
    const streams = byOwner.get(stream.ownerId);
    if (!streams?.delete(stream)) return;
    if (streams.size === 0) byOwner.delete(stream.ownerId);
    open--;
    count(stream.tokenId, -1);
  }

  async function readNew() {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        if (open === 0) {
          // Idle, it only keeps its place; a stream opened meanwhile needs every change after the old one.
          const newest = await store.newest();
          if (open === 0) cursor = Math.max(cursor, newest);
          break;
        }
        const changes = await store.readAll(cursor, PAGE);
        for (const change of changes) {
          const streams = byOwner.get(change.ownerId);
          if (streams) {
            const bytes = eventBytes(change);
            for (const stream of streams) stream.deliver(change, bytes);
          }
          cursor = change.seq;
        }
        if (changes.length === PAGE) again = true;
      } while (again && !stopped);
      failing = false;
    } catch (error) {
      if (!failing) log("reading the change log for open streams failed; trying again", faultDetail(error));
      failing = true;
    } finally {
      reading = false;
    }
  }

  /** Streams of tokens no longer valid end; a failed check ends none. */
  async function checkTokens() {
    const valid = await tokens.stillValid([...byToken.keys()]).catch(() => undefined);
    if (!valid) return;
    for (const streams of [...byOwner.values()])
      for (const stream of [...streams]) if (!valid.has(stream.tokenId)) stream.end();
  }

  function tick() {
    if (stopped) return;
    const now = timers.now();
    for (const streams of byOwner.values()) for (const stream of streams) stream.heartbeat(now, HEARTBEAT_MS);
    const checking = now - checkedAt >= TOKEN_CHECK_MS && byToken.size > 0;
    if (checking) checkedAt = now;
    void Promise.all([checking && checkTokens(), readNew()]).finally(() => timers.setTimeout(tick, POLL_MS).unref());
  }

  /** Once: where the log is now, then the wake-ups and the tick. A start that failed is tried again by the next stream. */
  function start(): Promise<void> {
    started ??= (async () => {
      cursor = Math.max(cursor, await store.newest());
      stopWatching = await store.watch(() => void readNew());
      checkedAt = timers.now();
      timers.setTimeout(tick, POLL_MS).unref();
    })().catch((error) => {
      started = undefined;
      throw error;
    });
    return started;
  }

  const failed = (stream: ChangeStream) => (error: unknown) => {
    log("a change stream could not read its backlog; it was closed and resumes with Last-Event-ID", faultDetail(error));
    stream.end();
  };

  return {
    /**
     * A stream of the owner's changes after `after` (with none, only those made from now on):
     * 429 or 503 past the limits, 410 when `after` is older than what is kept.
     */
    async open(ownerId: number, tokenId: number, after: bigint | undefined, cutOff?: () => void) {
      if (stopped)
        throw new HttpError(503, "The service is shutting down; reconnect in a moment.", { "retry-after": "1" });
      if ((byToken.get(tokenId) ?? 0) >= perToken)
        throw new HttpError(429, `This token has ${perToken} change streams open here already; close one.`, RETRY);
      if (open >= max) throw new HttpError(503, "This instance holds all the change streams it may; retry.", RETRY);
      const stream = new ChangeStream(ownerId, tokenId, MAX_BEHIND_BYTES, timers.now, forget, cutOff);
      // Counted and registered before the first read, so a change committed meanwhile waits in `pending`.
      open++;
      count(tokenId, 1);
      byOwner.set(ownerId, (byOwner.get(ownerId) ?? new Set()).add(stream));
      try {
        await start();
        // Without a cursor, one past any seq: only the owner's marks are read.
        const first = await store.read(ownerId, after ?? INT64_MAX, after === undefined ? 0 : CATCH_UP_PAGE);
        if (after !== undefined && after < BigInt(first.prunedThrough)) throw gone(first.newest);
        stream.cursor = after === undefined ? first.newest : Number(after);
        stream.send(OPENED);
        const page = (after: number) => store.read(ownerId, BigInt(after), CATCH_UP_PAGE);
        stream.catchUp(first.changes, first.more, page).catch(failed(stream));
        return stream.body;
      } catch (error) {
        stream.end();
        throw error;
      }
    },
    /** Every stream ends at once (SIGTERM), so its client reconnects elsewhere. */
    async close() {
      stopped = true;
      for (const streams of [...byOwner.values()]) for (const stream of [...streams]) stream.end();
      await stopWatching?.().catch(() => {});
    },
  };
}

export type ChangeFeed = ReturnType<typeof createChangeFeed>;
