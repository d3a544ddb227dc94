import type { Change, ChangePage } from "../core/changes";
import { changeEvent } from "./model";

const encoder = new TextEncoder();
const HEARTBEAT = encoder.encode(": keep-alive\n\n");
/** Live changes held for a stream still reading its backlog; past it the stream is closed (it resumes). */
const MAX_PENDING = 10_000;

/** The event's bytes, built once however many streams it goes to. */
export const eventBytes = (change: Change) => {
  let bytes: Uint8Array | undefined;
  return () => {
    bytes ??= encoder.encode(changeEvent(change));
    return bytes;
  };
};

/**
 * One open stream of an owner's changes: a byte queue that may hold `maxBehindBytes` before its
 * reader counts as gone (it resumes with Last-Event-ID). `onEnd` runs once, however it ends.
 */
export class ChangeStream {
  readonly body: ReadableStream<Uint8Array>;
  /** The seq of the last change sent. */
  cursor = 0;
  /** While it reads its backlog, live changes wait here. */
  pending: Change[] | undefined = [];
  lastSentAt: number;
  private controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  private room: (() => void) | undefined;
  private ended = false;

  constructor(
    readonly ownerId: number,
    readonly tokenId: number,
    private readonly maxBehindBytes: number,
    private readonly now: () => number,
    private readonly onEnd: (stream: ChangeStream) => void,
    /** A socket its client no longer reads does not close by itself: this closes it. */
    private readonly cutOff: (() => void) | undefined,
  ) {
    this.lastSentAt = now();
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        pull: () => this.takeRoom(),
        cancel: () => this.end(),
      },
      { highWaterMark: maxBehindBytes, size: (chunk) => chunk?.byteLength ?? 0 },
    );
  }

  /** Queues bytes; a reader past its allowance, or one already gone, ends the stream. */
  send(bytes: Uint8Array, seq?: number) {
    if (this.ended || !this.controller) return;
    try {
      this.controller.enqueue(bytes);
    } catch {
      return this.end();
    }
    this.lastSentAt = this.now();
    if (seq !== undefined) this.cursor = seq;
    if ((this.controller.desiredSize ?? 0) >= 0) return;
    this.end();
    this.cutOff?.();
  }

  heartbeat(now: number, everyMs: number) {
    if (now - this.lastSentAt >= everyMs) this.send(HEARTBEAT);
  }

  /** A change of its owner, live: sent, or held while the backlog is read. */
  deliver(change: Change, bytes: () => Uint8Array) {
    if (change.seq <= this.cursor) return;
    if (!this.pending) return this.send(bytes(), change.seq);
    if (this.pending.length >= MAX_PENDING) return this.end();
    this.pending.push(change);
  }

  /** The backlog a page at a time as its reader takes it, then what waited; ends if pruned past its cursor. */
  async catchUp(changes: Change[], more: boolean, page: (after: number) => Promise<ChangePage>) {
    for (;;) {
      for (const change of changes) this.send(eventBytes(change)(), change.seq);
      if (!more) break;
      for (let wait = this.roomForMore(); wait; wait = this.roomForMore()) await wait;
      if (this.ended) return;
      const next = await page(this.cursor);
      if (next.prunedThrough > this.cursor) return this.end();
      ({ changes, more } = next);
    }
    const waiting = this.pending ?? [];
    this.pending = undefined;
    for (const change of waiting) this.deliver(change, eventBytes(change));
  }

  /** Resolves once the reader holds less than half of its allowance (or the stream ended). */
  roomForMore(): Promise<void> | undefined {
    if (this.ended || (this.controller?.desiredSize ?? 0) >= this.maxBehindBytes / 2) return undefined;
    return new Promise((resolve) => {
      this.room = resolve;
    });
  }

  end() {
    if (this.ended) return;
    this.ended = true;
    this.takeRoom();
    try {
      this.controller?.close();
    } catch {
      // Already closed by the client going away.
    }
    this.onEnd(this);
  }

  private takeRoom() {
    const room = this.room;
    this.room = undefined;
    room?.();
  }
}
