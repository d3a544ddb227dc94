/**
 * `bun bench/commit-cost.ts`: what one group commit's COMMIT costs at synchronous=FULL against
 * NORMAL on this machine's disk (batches of 30 one-row inserts in WAL, a file in the system's
 * temporary folder). At FULL the COMMIT waits for an fsync, and the group commit runs on the
 * event loop's thread: every read queued behind it waits that long too (docs/decisions/0014).
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const BATCHES = 300;
const BATCH = 30;
const dir = mkdtempSync(join(tmpdir(), "plant-store-commit-cost-"));
try {
  for (const synchronous of ["FULL", "NORMAL"]) {
    const db = new Database(join(dir, `${synchronous}.sqlite`), { create: true });
    db.run("PRAGMA journal_mode = WAL");
    db.run(`PRAGMA synchronous = ${synchronous}`);
    db.run("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
    const insert = db.prepare("INSERT INTO t (id, v) VALUES (?, ?)");
    let statements = 0;
    let commit = 0;
    let id = 0;
    for (let b = 0; b < BATCHES; b++) {
      const started = performance.now();
      db.run("BEGIN IMMEDIATE");
      for (let i = 0; i < BATCH; i++) insert.run(++id, "a plant name");
      const written = performance.now();
      db.run("COMMIT");
      statements += written - started;
      commit += performance.now() - written;
    }
    db.close();
    console.log(
      `${synchronous.padEnd(6)} a batch of ${BATCH}: statements ${(statements / BATCHES).toFixed(3)} ms, COMMIT ${(commit / BATCHES).toFixed(3)} ms`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
