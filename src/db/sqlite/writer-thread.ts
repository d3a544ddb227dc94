import type { Database } from "bun:sqlite";
import type { SynchronousMode } from "../../core/database";
import { type StoreFailureKind, StoreUnavailable } from "../../core/failures";
import { readSnapshot, type TurnEnd } from "./snapshot";
import type { Steps, Write, Writer } from "./writer";
import { type FromWriter, fromWire, type ToWriter, threadScript } from "./writer-protocol";

export interface WriterThreadOptions {
  path: string;
  synchronous: SynchronousMode;
  maxQueued: number;
  lockTimeoutMs: number;
  onHealthChange?: (problem: StoreFailureKind | undefined, error?: unknown) => void;
  onCrash?: (error: unknown) => void;
  /** The connection this thread's reads run on: its snapshot ends with each commit reported. */
  reads: Database;
  /**
   * A descriptor of the file's `-shm`, open until every connection of this process to the file is
   * closed (closing one drops all of the process's locks on the file), for the thread's checkpoint.
   * Without one, SQLite's own checkpoint runs.
   */
  walIndex?: number;
  atTurnEnd?: TurnEnd;
  /** Tests give one that dies. */
  script?: URL;
}

interface Waiting {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  counted: boolean;
}

const RESPAWN_EVERY_MS = 1_000;
const PROBE_EVERY_MS = 1_000;

/**
 * Group commit on a thread of its own (docs/decisions/0001-group-commit.md), so fsyncs do not hold
 * up the event loop. The cap on queued writes is kept here, so a refusal costs no message.
 */
export function startWriterThread(options: WriterThreadOptions): Writer {
  const waiting = new Map<number, Waiting>();
  let nextId = 0;
  let counted = 0;
  let outbox: Extract<ToWriter, { type: "writes" }>["writes"] = [];
  let probedAt = Number.NEGATIVE_INFINITY;
  let problem: StoreFailureKind | undefined;
  let closed: (() => void) | undefined;
  let stopping = false;
  let worker: Worker | undefined;
  let spawnedAt = Number.NEGATIVE_INFINITY;
  // Set by the thread while it folds the WAL back: reads then take no snapshot, which would hold it up
  // (nor once closing: the final checkpoint is the connection's close).
  const checkpointing = new Int32Array(new SharedArrayBuffer(4));
  const reads = readSnapshot(options.reads, options.atTurnEnd, () => stopping || Atomics.load(checkpointing, 0) === 1);

  function spawn(): Worker {
    const thread = new Worker(options.script ?? threadScript("writer-worker.ts"));
    thread.onmessage = (event: MessageEvent<FromWriter>) => receive(event.data);
    thread.onerror = (event) => crashed(thread, event.error ?? new Error(event.message));
    thread.addEventListener("close", () => crashed(thread, new Error("the writer thread exited")));
    const { path, synchronous, lockTimeoutMs, walIndex } = options;
    thread.postMessage({ type: "init", path, synchronous, lockTimeoutMs, checkpointing, walIndex } satisfies ToWriter);
    return thread;
  }

  function settle(id: number, outcome: { ok: true; value: unknown } | { ok: false; error: unknown }) {
    const entry = waiting.get(id);
    if (!entry) return;
    waiting.delete(id);
    if (entry.counted) counted--;
    if (outcome.ok) entry.resolve(outcome.value ?? undefined);
    else entry.reject(outcome.error);
  }

  function receive(message: FromWriter) {
    switch (message.type) {
      case "done":
        reads.end();
        for (const [id, ok, detail] of message.results) {
          settle(id, ok ? { ok, value: detail } : { ok, error: fromWire(detail) });
        }
        return;
      case "health":
        if (message.problem === problem) return;
        problem = message.problem;
        options.onHealthChange?.(problem, message.error && fromWire(message.error));
        return;
      case "open-failed":
        if (worker) crashed(worker, fromWire(message.error));
        return;
      case "closed":
        closed?.();
        return;
    }
  }

  function failAll(error: unknown) {
    for (const id of [...waiting.keys()]) settle(id, { ok: false, error });
  }

  /** Its writes fail (503, never a hang); the next write after RESPAWN_EVERY_MS starts another. */
  function crashed(thread: Worker, error: unknown) {
    if (thread !== worker) return;
    worker = undefined;
    thread.terminate();
    Atomics.store(checkpointing, 0, 0);
    if (!stopping) options.onCrash?.(error);
    outbox = [];
    failAll(new StoreUnavailable("io", { cause: error }));
    closed?.();
  }

  /** A turn after the write, so starting the thread does not hold up the answer it rides beside. */
  function send() {
    if (outbox.length === 0) return;
    const writes = outbox;
    outbox = [];
    if (!worker) {
      spawnedAt = performance.now();
      try {
        worker = spawn();
      } catch (error) {
        options.onCrash?.(error);
        return failAll(new StoreUnavailable("io", { cause: error }));
      }
    }
    worker.postMessage({ type: "writes", writes } satisfies ToWriter);
  }

  const run = <T>(write: Write | Steps, { bookkeeping = false } = {}): Promise<T> => {
    if (stopping) return Promise.reject(new StoreUnavailable("capacity"));
    if (!bookkeeping && counted >= options.maxQueued) return Promise.reject(new StoreUnavailable("capacity"));
    if (!worker && performance.now() - spawnedAt < RESPAWN_EVERY_MS) {
      return Promise.reject(new StoreUnavailable("io", { cause: new Error("the writer thread is restarting") }));
    }
    const id = ++nextId;
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve: resolve as (value: unknown) => void, reject, counted: !bookkeeping });
      if (!bookkeeping) counted++;
      if (outbox.length === 0) setImmediate(send);
      outbox.push({ id, write, bookkeeping });
    });
  };

  return {
    run,
    snapshot: reads.enter,
    problem() {
      const now = performance.now();
      if ((problem === "full" || problem === "io") && worker && now - probedAt >= PROBE_EVERY_MS) {
        probedAt = now;
        worker.postMessage({ type: "probe" } satisfies ToWriter);
      }
      return problem;
    },

    async close() {
      reads.end();
      if (stopping) return;
      stopping = true;
      send();
      const thread = worker;
      if (!thread) return;
      await new Promise<void>((resolve) => {
        closed = resolve;
        thread.postMessage({ type: "close" } satisfies ToWriter);
      });
      worker = undefined;
      thread.terminate();
    },
  };
}
