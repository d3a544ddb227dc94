/**
 * The writer thread: its own connection to the database file, running group commit, so the
 * fsync of every commit (synchronous=FULL) waits here while the main thread goes on answering
 * reads from its connection, which WAL allows. It loads bun:sqlite and the group commit alone:
 * the SQL comes from the main thread, written there by Drizzle (write-sql.ts).
 */
import { Database } from "bun:sqlite";
import { createGroupCommit, type GroupCommit } from "./group-commit";
import { prepareWrites, type WriteRunner } from "./write-statements";
import { type FromWriter, type ToWriter, toWire, type WriteBatch, type WriterInit } from "./writer-protocol";

declare const self: Worker;

let sqlite: Database | undefined;
let commit: GroupCommit | undefined;
let runWrite: WriteRunner | undefined;
/** Writes received and not yet answered: closing waits for them. */
let unanswered = 0;
let closing = false;
let answers: Extract<FromWriter, { type: "done" }>["results"] = [];

const post = (message: FromWriter) => self.postMessage(message);

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

function open(init: WriterInit) {
  try {
    // Never creates the file: one that is gone is a failure to report, not a new empty store.
    sqlite = new Database(init.path, { readwrite: true, create: false, strict: true });
    // Per connection: the main thread set these on its own; WAL is the file's and already on.
    sqlite.run(`PRAGMA synchronous = ${init.synchronous}`);
    sqlite.run("PRAGMA foreign_keys = ON");
    runWrite = prepareWrites(sqlite, init.texts);
    commit = createGroupCommit(sqlite, {
      lockTimeoutMs: init.lockTimeoutMs,
      onHealthChange: (problem, error) =>
        post({ type: "health", problem, error: error === undefined ? undefined : toWire(error) }),
    });
  } catch (error) {
    post({ type: "open-failed", error: toWire(error) });
  }
}

function write({ writes }: WriteBatch) {
  for (const { id, name, args, bookkeeping } of writes) {
    unanswered++;
    if (!commit || !runWrite) {
      answer([id, false, { kind: "io", message: "the writer's connection is not open" }]);
      continue;
    }
    const run = runWrite;
    commit
      .run(() => run(name, args as never), { bookkeeping })
      .then(
        (value) => answer([id, true, value]),
        (error) => answer([id, false, toWire(error)]),
      );
  }
}

function close() {
  // `true` finalizes the prepared statements and lets go of the connection now: left as a
  // zombie until they are collected, it would hold the WAL and the main thread's final
  // checkpoint would find the database busy, quietly.
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
  else {
    closing = true;
    if (unanswered === 0) close();
  }
};
