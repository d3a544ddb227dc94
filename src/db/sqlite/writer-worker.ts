/** The writer thread (writer-thread.ts): group commit on its own connection. */
import { Database } from "bun:sqlite";
import { readSync } from "node:fs";
import { createGroupCommit, type GroupCommit } from "./group-commit";
import { statementRunner } from "./writer";
import { type FromWriter, type ToWriter, toWire } from "./writer-protocol";

declare const self: Worker;

let sqlite: Database | undefined;
let commit: GroupCommit | undefined;
let runStatement: ReturnType<typeof statementRunner> | undefined;
let unanswered = 0;
let closing = false;
let answers: Extract<FromWriter, { type: "done" }>["results"] = [];

const post = (message: FromWriter) => self.postMessage(message);

/** SQLite's own mark; the WAL index is looked at most this often, and a checkpoint that waited or failed is tried again later. */
const CHECKPOINT_AT_FRAMES = 1_000;
const LOOK_EVERY_MS = 10;
const FIRST_RETRY_MS = 1_000;
const LAST_RETRY_MS = 30_000;
let lookAfter = 0;
let retryMs = FIRST_RETRY_MS;

/** The WAL's frames, from the WAL index's header: its 5th u32, in native order (sqlite.org/walformat.html). */
function walFrames(walIndex: number): number {
  const header = new Uint32Array(5);
  // Another process's recovery can leave it shorter than its header for a moment.
  if (readSync(walIndex, header, 0, 20, 0) < 20) throw new Error("the WAL index has no header");
  return header[4] ?? 0;
}

/**
 * The WAL folded back here, not in COMMIT: with the main thread's reads in a snapshot most of the
 * time (snapshot.ts), SQLite's own checkpoint, which never waits, would never restart the WAL. The
 * shared flag stops new snapshots a moment before; the checkpoint waits for any still open to end
 * with its turn. Another process's long read (a backup, say) makes it give up after 100 ms, and
 * the next tries come at the first commits 1, 2, 4… up to 30 s later.
 * Never throws: the writes before it are committed.
 */
function checkpointWhenLarge(db: Database, walIndex: number, checkpointing: Int32Array) {
  const now = performance.now();
  if (Atomics.load(checkpointing, 0) === 1 || now < lookAfter) return;
  lookAfter = now + LOOK_EVERY_MS;
  try {
    if (walFrames(walIndex) < CHECKPOINT_AT_FRAMES) {
      retryMs = FIRST_RETRY_MS;
      return;
    }
  } catch {
    lookAfter = now + FIRST_RETRY_MS;
    return;
  }
  Atomics.store(checkpointing, 0, 1);
  setTimeout(() => {
    let done = false;
    try {
      db.run("PRAGMA busy_timeout = 100");
      done = db.query<{ busy: number }, []>("PRAGMA wal_checkpoint(RESTART)").get()?.busy === 0;
    } catch {
      // A full disk, or a connection closed since: as when busy, tried again a while later.
    } finally {
      Atomics.store(checkpointing, 0, 0);
      if (sqlite === db) db.run("PRAGMA busy_timeout = 0");
    }
    if (done) retryMs = FIRST_RETRY_MS;
    else {
      lookAfter = performance.now() + retryMs;
      retryMs = Math.min(retryMs * 2, LAST_RETRY_MS);
    }
  }, 1);
}

/** Answers settled in one turn go back in one message. */
function answer(result: (typeof answers)[number]) {
  if (answers.length === 0) queueMicrotask(sendAnswers);
  answers.push(result);
}

function sendAnswers() {
  const results = answers;
  answers = [];
  unanswered -= results.length;
  post({ type: "done", results });
  if (closing && unanswered === 0) close();
}

function open(init: Extract<ToWriter, { type: "init" }>) {
  try {
    // A file that is gone is a failure, not a new empty store.
    sqlite = new Database(init.path, { readwrite: true, create: false, strict: true });
    // Per connection; WAL is the file's and already on.
    sqlite.run(`PRAGMA synchronous = ${init.synchronous}`);
    sqlite.run("PRAGMA foreign_keys = ON");
    runStatement = statementRunner(sqlite);
    const db = sqlite;
    const { walIndex, checkpointing } = init;
    if (walIndex !== undefined) sqlite.run("PRAGMA wal_autocheckpoint = 0");
    commit = createGroupCommit(sqlite, {
      lockTimeoutMs: init.lockTimeoutMs,
      afterCommit: walIndex === undefined ? undefined : () => checkpointWhenLarge(db, walIndex, checkpointing),
      onHealthChange: (problem, error) =>
        post({ type: "health", problem, error: error === undefined ? undefined : toWire(error) }),
    });
  } catch (error) {
    post({ type: "open-failed", error: toWire(error) });
  }
}

function write({ writes }: Extract<ToWriter, { type: "writes" }>) {
  for (const { id, write, bookkeeping } of writes) {
    unanswered++;
    const run = runStatement;
    if (!commit || !run) {
      answer([id, false, { kind: "io", message: "the writer's connection is not open" }]);
      continue;
    }
    commit
      .run(() => run(write), { bookkeeping })
      .then(
        (value) => answer([id, true, value]),
        (error) => answer([id, false, toWire(error)]),
      );
  }
}

function close() {
  // `true` lets go now: left to be collected, it would hold the WAL and fail the final checkpoint.
  try {
    sqlite?.close(true);
  } catch {
    // Nothing is lost: every write was answered before, and the main thread checkpoints.
  }
  sqlite = undefined;
  post({ type: "closed" });
}

self.onmessage = (event: MessageEvent<ToWriter>) => {
  const message = event.data;
  if (message.type === "init") open(message);
  else if (message.type === "writes") write(message);
  else if (message.type === "probe") commit?.problem();
  else {
    closing = true;
    if (unanswered === 0) close();
  }
};
