import type { SynchronousMode } from "../../core/database";
import { type StoreFailureKind, StoreUnavailable } from "../../core/failures";
import type { WriteSql } from "./write-statements";
import { probing, type Writer } from "./writer";
import { type FromWriter, fromWire, type ToWriter, type WriteBatch } from "./writer-protocol";

export interface WorkerWriterOptions {
  path: string;
  synchronous: SynchronousMode;
  texts: WriteSql;
  /** Client writes waiting for their commit at once; past it a write is refused at once (MAX_IN_FLIGHT). */
  maxQueued: number;
  lockTimeoutMs: number;
  onHealthChange?: (problem: StoreFailureKind | undefined, error?: unknown) => void;
  /** Told when the writer thread dies or cannot open the file: its writes fail with 503; a later write starts a new one. */
  onCrash?: (error: unknown) => void;
  /** The thread's script: writer-worker.ts; tests give one that dies. */
  script?: URL;
}

interface Waiting {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  counted: boolean;
}

/** After the writer thread dies, a new one is started by a write, at most this often. */
const RESPAWN_EVERY_MS = 1_000;

/** Set by the start bundle's build (src/start/bundle.ts) to the built script's path. */
declare const PLANT_STORE_WRITER_SCRIPT: string | undefined;

/**
 * The writer thread's script. In the start bundle it is the bundle's own build of it; in a
 * binary, `bun build --compile` bundles it as an entry point of its own (package.json's build
 * script), under the path it has below src/, while import.meta.url here is then the binary's
 * own: the path is spelled out for that case.
 */
const WORKER_URL =
  typeof PLANT_STORE_WRITER_SCRIPT === "string"
    ? PLANT_STORE_WRITER_SCRIPT
    : import.meta.url.includes("/$bunfs/")
      ? new URL("./db/sqlite/writer-worker.ts", import.meta.url)
      : new URL("./writer-worker.ts", import.meta.url);

/**
 * Group commit on a writer thread (writer-worker.ts) with its own connection: commits and their
 * fsyncs no longer hold up the event loop, so reads go on while a batch becomes durable. Each
 * write still resolves only once its commit is, with its own result; the cap on queued writes
 * is kept here, so a refusal costs no message.
 */
export function startWorkerWriter(options: WorkerWriterOptions): Writer {
  const waiting = new Map<number, Waiting>();
  let nextId = 0;
  let counted = 0;
  let outbox: WriteBatch["writes"] = [];
  let problem: StoreFailureKind | undefined;
  let closed: (() => void) | undefined;
  let stopping = false;
  // Started by the first write, not with the stores: `new Worker` held the main thread for 1.5
  // to 3 ms of every start, which a start serving reads first does not need (a CPU profile of a
  // bundled start, `bun --cpu-prof --cpu-prof-interval=100`, ten starts).
  let worker: Worker | undefined;
  let spawnedAt = Number.NEGATIVE_INFINITY;

  function spawn(): Worker {
    const thread = new Worker(options.script ?? WORKER_URL);
    thread.onmessage = (event: MessageEvent<FromWriter>) => receive(event.data);
    thread.onerror = (event) => crashed(thread, event.error ?? new Error(event.message));
    thread.addEventListener("close", () => crashed(thread, new Error("the writer thread exited")));
    const init: ToWriter = {
      type: "init",
      path: options.path,
      synchronous: options.synchronous,
      texts: options.texts,
      lockTimeoutMs: options.lockTimeoutMs,
    };
    thread.postMessage(init);
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
        // As a crash: the next write after the pause tries again with a new thread.
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

  /** The thread died: its writes fail (a 503, never a hang); the next write after a pause starts another. */
  function crashed(thread: Worker, error: unknown) {
    if (thread !== worker) return;
    worker = undefined;
    thread.terminate();
    if (!stopping) options.onCrash?.(error);
    // Writes not yet handed over fail with the rest and are never sent to a later thread.
    outbox = [];
    failAll(new StoreUnavailable("io", { cause: error }));
    closed?.();
  }

  /**
   * Hands the writes queued in this turn to the thread, starting one when none runs: run()
   * admitted them only outside the pause after a crash. Called a turn after the write (never
   * in a request's handler), so the first write does not hold up the answer it rides beside.
   */
  function send() {
    if (outbox.length === 0) return;
    const writes = outbox;
    outbox = [];
    if (!worker) {
      spawnedAt = performance.now();
      try {
        worker = spawn();
      } catch (error) {
        // Thrown here it would escape the timer that calls send, not reach the writes' callers.
        options.onCrash?.(error);
        return failAll(new StoreUnavailable("io", { cause: error }));
      }
    }
    worker.postMessage({ type: "writes", writes } satisfies ToWriter);
  }

  const run: Writer["run"] = (name, args, { bookkeeping = false } = {}) => {
    if (stopping) return Promise.reject(new StoreUnavailable("capacity"));
    if (!bookkeeping && counted >= options.maxQueued) return Promise.reject(new StoreUnavailable("capacity"));
    if (!worker && performance.now() - spawnedAt < RESPAWN_EVERY_MS) {
      return Promise.reject(new StoreUnavailable("io", { cause: new Error("the writer thread is restarting") }));
    }
    const id = ++nextId;
    return new Promise((resolve, reject) => {
      waiting.set(id, { resolve: resolve as (value: unknown) => void, reject, counted: !bookkeeping });
      if (!bookkeeping) counted++;
      // Writes queued in one turn of the event loop cross to the writer in one message.
      if (outbox.length === 0) setImmediate(send);
      outbox.push({ id, name, args, bookkeeping });
    });
  };

  return {
    run,
    problem: probing(() => problem, run),

    async close() {
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
