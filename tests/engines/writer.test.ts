/**
 * The writer (docs/decisions/0001-group-commit.md) on a database file: the group commit on the
 * store's connection, and the reads of a turn between its commits (0015).
 */
import { Database } from "bun:sqlite";
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, readSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Stores } from "../../src/core/stores";
import { openDatabase } from "../../src/db/sqlite/client";
import { createSqliteStores } from "../../src/db/sqlite/stores";
import { createWriter, type Write } from "../../src/db/sqlite/writer";
import { onSqlite } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A scratch folder removed after the test. */
function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), "plant-store-writer-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Stores on a fresh database file, with its default writer; one user (id 1) exists. */
function storesOnFile(): { stores: Stores; path: string } {
  const path = join(scratch(), "plants.sqlite");
  const { sqlite } = openDatabase({ path, synchronous: "FULL" });
  sqlite.run("INSERT INTO users (id, name, created_at) VALUES (1, 'a', 0)");
  const stores = createSqliteStores(sqlite, { maxQueued: 1024, lockTimeoutMs: 5_000, log: () => {} });
  cleanups.push(() => stores.close());
  return { stores, path };
}

/** The service's own connection to `path` (migrated), closed after the test. */
function openedOn(path: string): Database {
  const { sqlite } = openDatabase({ path, synchronous: "FULL" });
  cleanups.push(() => sqlite.close());
  return sqlite;
}

/** The WAL's frames, from the WAL index's header (sqlite.org/walformat.html). */
function walFrames(path: string): number {
  const header = new Uint32Array(5);
  const file = openSync(`${path}-shm`, "r");
  readSync(file, header, 0, 20, 0);
  closeSync(file);
  return header[4] ?? 0;
}

/** One turn of the event loop: writes queued before it have been handed to the writer. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe.if(onSqlite)("the writer on a database file", () => {
  test("each write gets its own answer: 200, 409, 204 and 404 as one batch", async () => {
    const { stores } = storesOnFile();
    const outcomes = await Promise.all([
      stores.plants.createPlant(1, { id: 1, name: "a" }),
      stores.plants.createPlant(1, { id: 1, name: "again" }),
      stores.plants.createPlant(1, { id: 2, name: "b", tag: "t" }),
      stores.plants.deletePlant(1, 3n),
    ]);
    expect(outcomes).toEqual([{ name: "a" }, undefined, { name: "b", tag: "t" }, false]);
    expect(await stores.plants.deletePlant(1, 1n)).toBe(true);
    expect(await stores.plants.getPlant(1, 2n)).toEqual({ name: "b", tag: "t" });
    expect(await stores.plants.getPlant(1, 1n)).toBeUndefined();
  });

  test("ids past 2^53 are written and read back exactly", async () => {
    const { stores } = storesOnFile();
    const id = "9223372036854775807";
    await stores.plants.createPlant(1, { id: BigInt(id) as unknown as number, name: "max" });
    const page = await stores.plants.listPage(1, {}, 10);
    expect(page.lastId).toBe(BigInt(id));
  });

  test("steps run as one savepoint: a step that fails undoes the steps before it; the chosen step answers", async () => {
    const writer = createWriter(openedOn(join(scratch(), "plants.sqlite")), { maxQueued: 16 });
    cleanups.push(() => writer.close());
    const user = (name: string): Write => ({
      sql: "INSERT INTO users (name, created_at) VALUES (?1, ?2) RETURNING name, created_at AS at",
      mode: "get",
      params: [name, 2n ** 60n],
      exact: true,
    });
    expect(await writer.run(user("a"))).toEqual({ name: "a", at: 2n ** 60n });
    const failed = await writer.run({ steps: [user("b"), user("a")] }).catch((error) => error);
    expect(String(failed)).toContain("UNIQUE");
    expect(await writer.run({ steps: [user("c"), user("d")], answer: 0 })).toEqual({ name: "c", at: 2n ** 60n });
    const names = await writer.run({ sql: "SELECT group_concat(name) AS names FROM users", mode: "get", params: [] });
    expect(names).toEqual({ names: "a,c,d" });
  });

  test("closing waits for the writes queued, then a write is refused", async () => {
    const { stores } = storesOnFile();
    const writes = [1, 2, 3].map((id) => stores.plants.createPlant(1, { id, name: `p${id}` }));
    await stores.close();
    expect(await Promise.all(writes)).toEqual([{ name: "p1" }, { name: "p2" }, { name: "p3" }]);
    await expect(stores.plants.createPlant(1, { id: 4, name: "late" })).rejects.toThrow();
    cleanups.pop();
  });

  test("the file deleted, moved or replaced under the store: writes fail as io until it is back, none is lost", async () => {
    const { stores, path } = storesOnFile();
    const create = (id: number) => stores.plants.createPlant(1, { id, name: `p${id}` });
    const refused = { kind: "io", cause: expect.objectContaining({ message: expect.stringContaining(path) }) };
    expect(await create(1)).toEqual({ name: "p1" });
    // Moved away: the connection would go on writing to a file no one opens again.
    renameSync(path, `${path}.moved`);
    await expect(create(2)).rejects.toMatchObject(refused);
    expect(stores.status.problem()).toBe("io");
    // Another database in its place.
    const other = join(scratch(), "other.sqlite");
    openedOn(other).close();
    renameSync(other, path);
    await expect(create(3)).rejects.toMatchObject(refused);
    // Deleted.
    rmSync(path);
    await expect(create(4)).rejects.toMatchObject(refused);
    // Its folder moved away and a file in its place: the path cannot even be looked up.
    const folder = dirname(path);
    renameSync(`${path}.moved`, path);
    renameSync(folder, `${folder}.moved`);
    writeFileSync(folder, "not a folder");
    await expect(create(5)).rejects.toMatchObject(refused);
    rmSync(folder);
    renameSync(`${folder}.moved`, folder);
    // Put back: writes go on, and every one written is in the file.
    expect(await create(6)).toEqual({ name: "p6" });
    expect(stores.status.problem()).toBeUndefined();
    await stores.close();
    cleanups.pop();
    const ids = openedOn(path).query("SELECT id FROM plants ORDER BY id").values();
    expect(ids).toEqual([[1], [6]]);
  });
});

describe.if(onSqlite)("reads between writes (one snapshot a turn)", () => {
  test("a turn's reads share one snapshot: a row another process commits is seen from the next turn", async () => {
    const { stores, path } = storesOnFile();
    const other = new Database(path);
    cleanups.push(() => other.close());
    expect(await stores.plants.getPlant(1, 5n)).toBeUndefined();
    other.run("INSERT INTO plants (owner_id, id, name) VALUES (1, 5, 'fern')");
    expect(await stores.plants.getPlant(1, 5n)).toBeUndefined();
    await turn();
    expect(await stores.plants.getPlant(1, 5n)).toEqual({ name: "fern" });
  });

  test("a write's answer ends the snapshot, so a read after it sees every commit before it", async () => {
    const reads = openedOn(join(scratch(), "plants.sqlite"));
    // The snapshot never ends with the turn here: only a write's answer can end it.
    const writer = createWriter(reads, {}, () => {});
    cleanups.push(() => writer.close());
    const names = reads.prepare<{ names: string | null }, []>(
      "SELECT group_concat(name) AS names FROM (SELECT name FROM users ORDER BY name)",
    );
    writer.snapshot();
    expect(names.get()).toEqual({ names: null });
    const other = new Database(reads.filename);
    other.run("INSERT INTO users (name, created_at) VALUES ('other', 0)");
    other.close();
    await turn();
    expect(names.get()).toEqual({ names: null });
    await writer.run({ sql: "INSERT INTO users (name, created_at) VALUES ('mine', 0)", mode: "run", params: [] });
    expect(names.get()).toEqual({ names: "mine,other" });
  });

  test("a connection closed under an open snapshot: its end at the turn's end throws nothing", async () => {
    const path = join(scratch(), "plants.sqlite");
    const reads = openDatabase({ path, synchronous: "FULL" }).sqlite;
    const writer = createWriter(reads, {});
    writer.snapshot();
    expect(reads.inTransaction).toBe(true);
    reads.close();
    await turn();
    await writer.close();
  });

  test("with a snapshot open nearly all the time, the WAL is still folded back near its 4 MiB mark", async () => {
    const { stores, path } = storesOnFile();
    let reading = true;
    const reader = (async () => {
      while (reading) {
        await stores.plants.getPlant(1, 1n);
        // A busy server's turn: its requests hold the turn's snapshot for a while.
        Bun.sleepSync(1);
        await turn();
      }
    })();
    const name = "x".repeat(1_000);
    let largest = 0;
    // 32 clients, each creating its next plant once its last is answered.
    const client = async (first: number) => {
      for (let id = first; id < first + 200; id++) {
        await stores.plants.createPlant(1, { id, name });
        largest = Math.max(largest, Bun.file(`${path}-wal`).size);
      }
    };
    await Promise.all(Array.from({ length: 32 }, (_, i) => client(i * 1_000)));
    reading = false;
    await reader;
    expect(largest).toBeLessThan(8 * 1024 * 1024);
  });

  test("another process's long read (a backup): every write still lands; the WAL restarts once it ends", async () => {
    const { stores, path } = storesOnFile();
    const backup = new Database(path, { readonly: true });
    cleanups.push(() => backup.close());
    backup.run("BEGIN");
    backup.query("SELECT count(*) FROM plants").get();
    const name = "x".repeat(1_000);
    let next = 0;
    const burst = () =>
      Promise.all(Array.from({ length: 200 }, () => stores.plants.createPlant(1, { id: ++next, name })));
    for (let i = 0; i < 15; i++) expect((await burst()).every((plant) => plant?.name === name)).toBe(true);
    expect(walFrames(path)).toBeGreaterThan(1_000);
    backup.run("COMMIT");
    // SQLite tries its checkpoint at each commit past 1,000 frames: the first after the read ends restarts the WAL.
    await until(
      async () => {
        await burst();
        return walFrames(path);
      },
      { holds: (frames) => frames < 1_000, what: "the WAL restarted", timeoutMs: 50_000 },
    );
  }, 60_000);

  test("closing ends the snapshot: the final checkpoint runs", async () => {
    const path = join(scratch(), "plants.sqlite");
    const { sqlite } = openDatabase({ path, synchronous: "FULL" });
    const logged: unknown[] = [];
    const stores = createSqliteStores(sqlite, {
      maxQueued: 16,
      lockTimeoutMs: 5_000,
      log: (line) => logged.push(line),
    });
    await stores.plants.createPlant(1, { id: 1, name: "fern" }).catch(() => {});
    expect(await stores.plants.getPlant(1, 1n)).toBeUndefined();
    await stores.close();
    expect(logged).toEqual([]);
    const wal = Bun.file(`${path}-wal`);
    expect((await wal.exists()) ? wal.size : 0).toBe(0);
  });

  test("a writer on the readers' connection: closing it ends the snapshot", async () => {
    const reads = openedOn(join(scratch(), "plants.sqlite"));
    // The snapshot never ends with the turn here: only the close can end it.
    const writer = createWriter(reads, {}, () => {});
    writer.snapshot();
    expect(reads.inTransaction).toBe(true);
    await writer.close();
    expect(reads.inTransaction).toBe(false);
  });

  test("reads in every turn while the stores close: none holds up the final checkpoint", async () => {
    for (let round = 0; round < 5; round++) {
      const path = join(scratch(), "plants.sqlite");
      const { sqlite } = openDatabase({ path, synchronous: "FULL" });
      sqlite.run("INSERT INTO users (id, name, created_at) VALUES (1, 'a', 0)");
      const logged: unknown[] = [];
      const stores = createSqliteStores(sqlite, {
        maxQueued: 16,
        lockTimeoutMs: 5_000,
        log: (line) => logged.push(line),
      });
      await stores.plants.createPlant(1, { id: 1, name: "fern" });
      let closed = false;
      const reader = (async () => {
        while (!closed) {
          // Once the connection is closed, a read fails: what counts is that none stopped the close.
          await stores.plants.getPlant(1, 1n).catch(() => {});
          await turn();
        }
      })();
      await stores.close();
      closed = true;
      await reader;
      expect(logged).toEqual([]);
      const wal = Bun.file(`${path}-wal`);
      expect((await wal.exists()) ? wal.size : 0).toBe(0);
    }
  });
});
