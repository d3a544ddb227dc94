import type { Change, ChangeStore } from "../core/changes";
import { type FaultLog, faultDetail } from "../core/fault";
import type { TokenStore } from "../core/stores";
import { systemTimers, type Timers } from "../core/timers";
import { HttpError } from "../http/errors";
import { changeEvent } from "./model";

const encoder = new TextEncoder();
/** Changes read per statement by the feed's read per wake-up. */
const PAGE = 1000;
/** A stream's backlog is read this many at a time, each page once the reader has room for it. */
const CATCH_UP_PAGE = 200;
/** Past any seq: the read that only asks for the owner's cursor. */
const LATEST = 2n ** 63n - 1n;

export interface FeedOptions {
  store: ChangeStore;
  tokens: Pick<TokenStore, "stillValid">;
  log: FaultLog;
  /** CHANGE_STREAMS_PER_TOKEN and MAX_CHANGE_STREAMS. */
  perToken: number;
  max: number;
  timers?: Timers;
  /** A comment line after this long without an event (SPEC: at least every 15 s). */
  heartbeatMs?: number;
  /** How often the tokens of open streams are checked (SPEC: a revoked one's streams end within 5 s). */
  tokenCheckMs?: number;
  /** The slow poll beside the wake-ups: another process's writes, a missed notification. */
  pollMs?: number;
  /** A reader this far behind is closed; it resumes with Last-Event-ID. */
  maxBehindBytes?: number;
}

interface Stream {
  ownerId: number;
  tokenId: number;
  /** The seq of the last change sent. */
  cursor: number;
  /** While it reads its backlog, the live changes for it wait here. */
  pending: Change[] | undefined;
  controller: ReadableStreamDefaultController<Uint8Array>;
  lastSentAt: number;
  /** Set while its backlog waits for the reader to take what was sent. */
  room?: () => void;
}

/**
 * The live side of the change log: open streams by owner, and one read of the log per wake-up (a
 * commit here, a notification from another instance, or the slow poll) fanned out to them all,
 * each event's text built once.
 */
export function createChangeFeed({
  store,
  tokens,
  log,
  perToken,
  max,
  timers = systemTimers,
  heartbeatMs = 10_000,
  tokenCheckMs = 2_500,
  pollMs = 1_000,
  maxBehindBytes = 1024 * 1024,
}: FeedOptions) {
  const byOwner = new Map<number, Set<Stream>>();
  const perTokenCount = new Map<number, number>();
  let open = 0;
  let cursor = 0;
  let started: Promise<void> | undefined;
  let stopWatching: (() => Promise<void>) | undefined;
  let reading = false;
  let again = false;
  let failing = false;
  let stopped = false;
  let lastTokenCheck = 0;

  function end(stream: Stream) {
    const streams = byOwner.get(stream.ownerId);
    if (!streams?.delete(stream)) return;
    if (streams.size === 0) byOwner.delete(stream.ownerId);
    open--;
    const left = (perTokenCount.get(stream.tokenId) ?? 1) - 1;
    if (left === 0) perTokenCount.delete(stream.tokenId);
    else perTokenCount.set(stream.tokenId, left);
    stream.room?.();
    try {
      stream.controller.close();
    } catch {
      // Already closed by the client going away.
    }
  }

  const isOpen = (stream: Stream) => byOwner.get(stream.ownerId)?.has(stream) === true;

  /** Resolves once the reader holds less than half of what it may fall behind. */
  function roomIn(stream: Stream): Promise<void> | undefined {
    if ((stream.controller.desiredSize ?? 0) >= maxBehindBytes / 2 || !isOpen(stream)) return undefined;
    return new Promise((resolve) => {
      stream.room = resolve;
    });
  }

  function send(stream: Stream, text: Uint8Array, seq?: number) {
    stream.controller.enqueue(text);
    stream.lastSentAt = timers.now();
    if (seq !== undefined) stream.cursor = seq;
    if ((stream.controller.desiredSize ?? 0) < 0) end(stream);
  }

  function deliver(stream: Stream, change: Change, text: () => Uint8Array) {
    if (change.seq <= stream.cursor) return;
    if (stream.pending) stream.pending.push(change);
    else send(stream, text(), change.seq);
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
        if (open === 0) break;
        const changes = await store.readAll(cursor, PAGE);
        for (const change of changes) {
          const streams = byOwner.get(change.ownerId);
          if (streams) {
            let bytes: Uint8Array | undefined;
            const text = () => {
              bytes ??= encoder.encode(changeEvent(change));
              return bytes;
            };
            for (const stream of streams) deliver(stream, change, text);
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

  /** Streams of tokens revoked since they opened end; a failed check ends none. */
  async function checkTokens() {
    const ids = [...perTokenCount.keys()];
    if (ids.length === 0) return;
    const valid = await tokens.stillValid(ids).catch(() => undefined);
    if (!valid) return;
    for (const streams of byOwner.values()) for (const stream of streams) if (!valid.has(stream.tokenId)) end(stream);
  }

  const HEARTBEAT = encoder.encode(": keep-alive\n\n");
  function tick() {
    if (stopped) return;
    const now = timers.now();
    for (const streams of byOwner.values())
      for (const stream of streams) if (now - stream.lastSentAt >= heartbeatMs) send(stream, HEARTBEAT);
    const checks = now - lastTokenCheck >= tokenCheckMs ? checkTokens() : undefined;
    if (checks) lastTokenCheck = now;
    void Promise.all([checks, readNew()]).finally(() => timers.setTimeout(tick, pollMs).unref());
  }

  function start(): Promise<void> {
    started ??= (async () => {
      stopWatching = await store.watch(() => void readNew());
      lastTokenCheck = timers.now();
      timers.setTimeout(tick, pollMs).unref();
    })();
    return started;
  }

  /** The stream's backlog after `from`, then what came meanwhile; then it is live. */
  async function catchUp(stream: Stream, first: Change[], more: boolean) {
    try {
      let page = first;
      let left = more;
      for (;;) {
        for (const change of page) send(stream, encoder.encode(changeEvent(change)), change.seq);
        if (!left) break;
        await roomIn(stream);
        if (!isOpen(stream)) return;
        const next = await store.read(stream.ownerId, BigInt(stream.cursor), CATCH_UP_PAGE);
        page = next.changes;
        left = next.more;
      }
      const waiting = stream.pending ?? [];
      stream.pending = undefined;
      for (const change of waiting)
        if (change.seq > stream.cursor) send(stream, encoder.encode(changeEvent(change)), change.seq);
    } catch (error) {
      log(
        "a change stream could not read its backlog; it was closed and resumes with Last-Event-ID",
        faultDetail(error),
      );
      end(stream);
    }
  }

  return {
    /**
     * A stream of the owner's changes after `after` (with none, only those made from now on):
     * 429 or 503 past the limits, 410 when `after` is older than what is kept.
     */
    async open(ownerId: number, tokenId: number, after: bigint | undefined): Promise<ReadableStream<Uint8Array>> {
      if (stopped)
        throw new HttpError(503, "The service is shutting down; reconnect in a moment.", { "retry-after": "1" });
      if ((perTokenCount.get(tokenId) ?? 0) >= perToken) {
        const message = `This token already has ${perToken} change streams open on this instance; close one, or retry later.`;
        throw new HttpError(429, message, { "retry-after": "5" });
      }
      if (open >= max) {
        const message = "This instance holds as many change streams as it may; retry in a moment.";
        throw new HttpError(503, message, { "retry-after": "5" });
      }
      const wasIdle = open === 0;
      let stream: Stream | undefined;
      const body = new ReadableStream<Uint8Array>(
        {
          start(controller) {
            stream = { ownerId, tokenId, cursor: 0, pending: [], controller, lastSentAt: timers.now() };
          },
          pull() {
            const room = stream?.room;
            if (room && stream) {
              stream.room = undefined;
              room();
            }
          },
          cancel() {
            if (stream) end(stream);
          },
        },
        { highWaterMark: maxBehindBytes, size: (chunk) => chunk?.byteLength ?? 0 },
      );
      const live = stream as unknown as Stream;
      // Counted and registered before the first read, so a change committed meanwhile waits in `pending`.
      open++;
      perTokenCount.set(tokenId, (perTokenCount.get(tokenId) ?? 0) + 1);
      byOwner.set(ownerId, (byOwner.get(ownerId) ?? new Set()).add(live));
      try {
        await start();
        if (wasIdle && !reading) cursor = await store.newest();
        const first = await store.read(ownerId, after ?? LATEST, after === undefined ? 0 : CATCH_UP_PAGE);
        if (after !== undefined && after < BigInt(first.prunedThrough)) throw gone(first.newest);
        live.cursor = after === undefined ? first.newest : Number(after);
        send(live, encoder.encode(": ok\n\n"));
        void catchUp(live, first.changes, first.more);
        return body;
      } catch (error) {
        end(live);
        throw error;
      }
    },
    /** A commit on this instance: read the log now. */
    wake: () => void readNew(),
    /** Every stream ends at once (SIGTERM), so its client reconnects elsewhere. */
    async close() {
      stopped = true;
      for (const streams of [...byOwner.values()]) for (const stream of [...streams]) end(stream);
      await stopWatching?.().catch(() => {});
    },
    openStreams: () => open,
  };
}

/** 410: the cursor is older than the oldest change kept. */
export function gone(newest: number): HttpError {
  return new HttpError(
    410,
    "after: changes after this cursor are no longer kept; list your plants again (GET /plants) and follow from the Changes-Cursor header of this answer.",
    { "changes-cursor": String(newest) },
  );
}

export type ChangeFeed = ReturnType<typeof createChangeFeed>;
