/**
 * The change log at the stores (SPEC, "Every change is an event"): each write that changes a plant
 * appends exactly one change in its own transaction, seqs only ever grow, pruning keeps the
 * newest, and a field of Plant reaches the log from the schema alone. On PostgreSQL also the
 * order under a late commit (a change written before others but committed after them is given a
 * larger seq) and two instances writing while a reader follows its cursor. What a client sees
 * over HTTP is in tests/api/changes.test.ts.
 */

import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { getTableColumns, type Table } from "drizzle-orm";
import { changeJson } from "../../src/changes/model";
import type { Change, ChangePage } from "../../src/core/changes";
import type { KeyedCreate } from "../../src/core/idempotency";
import type { Plant } from "../../src/core/plant";
import type { Stores } from "../../src/core/stores";
import { connect } from "../../src/db/postgres/client";
import { PLANT_SQL, VALUE_FIELDS as POSTGRES_VALUE_FIELDS } from "../../src/db/postgres/queries";
import * as postgresSchema from "../../src/db/postgres/schema";
import { createPostgresStores } from "../../src/db/postgres/stores";
import { VALUE_FIELDS as SQLITE_VALUE_FIELDS } from "../../src/db/sqlite/queries";
import * as sqliteSchema from "../../src/db/sqlite/schema";
import { PLANT_FIELDS, VALUE_FIELDS } from "../../src/plants/model";
import { ENGINE, freshStores, onPostgres, openedStores, postgresTarget } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";
import { userWithToken } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const T0 = 1_800_000_000_000;
const SECOND = 1_000;

const sessions: SQL[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
});

/**
 * Stores on a fresh database whose clock reads `now` (moved by the test), users alice and bob
 * (and carol, who never writes), and a way to run a statement on the database as it is.
 */
async function changeLog() {
  const time = { now: T0 };
  const fresh = await freshStores({
    clock: () => time.now,
    log: () => {},
    maxQueued: 1024,
    lockTimeoutMs: 5_000,
    limiterWaitMs: 60_000,
  });
  const { stores } = fresh;
  const [alice, bob, carol] = await Promise.all(
    ["alice", "bob", "carol"].map(async (name) => (await userWithToken(stores.tokens, name)).id),
  );
  const session = fresh.postgresUrl === undefined ? undefined : new SQL(fresh.postgresUrl, { max: 1 });
  if (session) sessions.push(session);
  return {
    ...fresh,
    stores,
    time,
    alice: alice as number,
    bob: bob as number,
    carol: carol as number,
    /** Runs a statement written for both engines on the database as it is. */
    run: async (sql: string) => {
      if (session) await session.unsafe(sql);
      else fresh.sqlite.run(sql);
    },
    /** Every change of `owner`, oldest first. */
    log: async (owner: number) => (await stores.changes.read(owner, 0n, 100_000)).changes,
    /** Every change of every owner, oldest first. */
    all: async () => {
      await stores.changes.settle();
      return stores.changes.readAll(0, 100_000);
    },
  };
}

/** A change as the test states it: its type, plant id and plant (the plant with no null or undefined field). */
const shape = (change: Change) => ({ type: change.type, id: change.id, plant: change.plant });

const keyed = (key: string, id: number): KeyedCreate => ({
  key,
  requestHash: `hash of ${key}`,
  at: T0,
  expiredAt: T0 - 3_600_000,
  created: { status: 200, body: `{"name":"plant ${id}"}`, etag: `"${id}"` },
  taken: { status: 409, body: "taken" },
});

function expectIncreasing(seqs: number[]) {
  for (let i = 1; i < seqs.length; i++) expect(seqs[i] as number).toBeGreaterThan(seqs[i - 1] as number);
}

describe(`each write logs exactly one change, in its own transaction (${ENGINE})`, () => {
  test("a create logs plant.created with the plant; a create of a taken id logs nothing", async () => {
    const c = await changeLog();
    expect(await c.stores.plants.createPlant(c.alice, { id: 1, name: "Fern", tag: "green" })).toEqual({
      name: "Fern",
      tag: "green",
    });
    const [created, ...rest] = await c.log(c.alice);
    expect(rest).toEqual([]);
    expect(created).toEqual({
      seq: expect.any(Number),
      ownerId: c.alice,
      type: "plant.created",
      at: T0,
      id: 1n,
      plant: { name: "Fern", tag: "green" },
    });
    expect(created?.seq).toBeGreaterThan(0);
    // A plant without a tag has no tag key in its change (not null, not undefined).
    await c.stores.plants.createPlant(c.alice, { id: 2, name: "Moss" });
    const moss = (await c.log(c.alice))[1] as Change;
    expect(Object.keys(moss.plant)).toEqual(["name"]);
    // The id is taken: no plant, no change; nor for a second try at once.
    const taken = await Promise.all([
      c.stores.plants.createPlant(c.alice, { id: 1, name: "Other" }),
      c.stores.plants.createPlant(c.alice, { id: 2, name: "Other" }),
    ]);
    expect(taken).toEqual([undefined, undefined]);
    expect((await c.log(c.alice)).map(shape)).toEqual([
      { type: "plant.created", id: 1n, plant: { name: "Fern", tag: "green" } },
      { type: "plant.created", id: 2n, plant: { name: "Moss" } },
    ]);
  });

  test("ids at both ends of int64 are logged exactly", async () => {
    const c = await changeLog();
    const [lowest, highest, past53] = [-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n];
    for (const id of [lowest, highest, past53]) await c.stores.plants.createPlant(c.alice, { id, name: `plant ${id}` });
    await c.stores.plants.updatePlant(c.alice, lowest, { name: "renamed" });
    await c.stores.plants.deletePlant(c.alice, highest);
    expect((await c.log(c.alice)).map((change) => [change.type, change.id])).toEqual([
      ["plant.created", lowest],
      ["plant.created", highest],
      ["plant.created", past53],
      ["plant.updated", lowest],
      ["plant.deleted", highest],
    ]);
  });

  test("an update that changes the plant logs plant.updated with the plant after it", async () => {
    const c = await changeLog();
    await c.stores.plants.createPlant(c.alice, { id: 1, name: "Fern", tag: "green" });
    c.time.now = T0 + SECOND;
    expect(await c.stores.plants.updatePlant(c.alice, 1n, { name: "Ivy" })).toEqual({ name: "Ivy", tag: "green" });
    c.time.now = T0 + 2 * SECOND;
    const conditional = await c.stores.plants.updatePlant(c.alice, 1n, { tag: "red" }, { name: "Ivy", tag: "green" });
    expect(conditional).toEqual({ name: "Ivy", tag: "red" });
    c.time.now = T0 + 3 * SECOND;
    expect(await c.stores.plants.updatePlant(c.alice, 1n, { tag: null })).toEqual({ name: "Ivy" });
    // An empty tag is a value: setting it is a change.
    expect(await c.stores.plants.updatePlant(c.alice, 1n, { tag: "" })).toEqual({ name: "Ivy", tag: "" });
    const log = await c.log(c.alice);
    expect(log.map(shape)).toEqual([
      { type: "plant.created", id: 1n, plant: { name: "Fern", tag: "green" } },
      { type: "plant.updated", id: 1n, plant: { name: "Ivy", tag: "green" } },
      { type: "plant.updated", id: 1n, plant: { name: "Ivy", tag: "red" } },
      { type: "plant.updated", id: 1n, plant: { name: "Ivy" } },
      { type: "plant.updated", id: 1n, plant: { name: "Ivy", tag: "" } },
    ]);
    expect(log.map((change) => change.at)).toEqual([
      T0,
      T0 + SECOND,
      T0 + 2 * SECOND,
      T0 + 3 * SECOND,
      T0 + 3 * SECOND,
    ]);
    expect(Object.keys((log[3] as Change).plant)).toEqual(["name"]);
  });

  test("an update to the values the plant has (or {}) logs nothing and answers the plant as it is", async () => {
    const c = await changeLog();
    await c.stores.plants.createPlant(c.alice, { id: 1, name: "Fern", tag: "green" });
    await c.stores.plants.createPlant(c.alice, { id: 2, name: "Moss" });
    const fern = { name: "Fern", tag: "green" };
    expect(await c.stores.plants.updatePlant(c.alice, 1n, {})).toEqual(fern);
    expect(await c.stores.plants.updatePlant(c.alice, 1n, { name: "Fern" })).toEqual(fern);
    expect(await c.stores.plants.updatePlant(c.alice, 1n, { name: "Fern", tag: "green" })).toEqual(fern);
    expect(await c.stores.plants.updatePlant(c.alice, 1n, { name: "Fern" }, fern)).toEqual(fern);
    expect(await c.stores.plants.updatePlant(c.alice, 1n, {}, fern)).toEqual(fern);
    // Removing a tag the plant does not have changes nothing either.
    expect(await c.stores.plants.updatePlant(c.alice, 2n, { tag: null })).toEqual({ name: "Moss" });
    expect(await c.stores.plants.updatePlant(c.alice, 2n, { name: "Moss", tag: null }, { name: "Moss" })).toEqual({
      name: "Moss",
    });
    expect((await c.log(c.alice)).map((change) => change.type)).toEqual(["plant.created", "plant.created"]);
  });

  test("an update or delete expecting a stale plant, or of a missing or another owner's plant, logs nothing", async () => {
    const c = await changeLog();
    await c.stores.plants.createPlant(c.alice, { id: 1, name: "Fern", tag: "green" });
    const stale = { name: "Fern" };
    expect(await c.stores.plants.updatePlant(c.alice, 1n, { name: "Ivy" }, stale)).toBeUndefined();
    // A change to the values it has, expecting a stale plant: refused too.
    expect(await c.stores.plants.updatePlant(c.alice, 1n, { name: "Fern" }, stale)).toBeUndefined();
    expect(await c.stores.plants.updatePlant(c.alice, 1n, {}, { name: "Fern", tag: "red" })).toBeUndefined();
    expect(await c.stores.plants.deletePlant(c.alice, 1n, stale)).toBe(false);
    expect(await c.stores.plants.deletePlant(c.alice, 1n, { name: "Fern", tag: "red" })).toBe(false);
    expect(await c.stores.plants.updatePlant(c.alice, 9n, { name: "Ivy" })).toBeUndefined();
    expect(await c.stores.plants.deletePlant(c.alice, 9n)).toBe(false);
    expect(await c.stores.plants.updatePlant(c.bob, 1n, { name: "Ivy" })).toBeUndefined();
    expect(await c.stores.plants.deletePlant(c.bob, 1n)).toBe(false);
    expect(await c.stores.plants.getPlant(c.alice, 1n)).toEqual({ name: "Fern", tag: "green" });
    expect((await c.all()).map(shape)).toEqual([
      { type: "plant.created", id: 1n, plant: { name: "Fern", tag: "green" } },
    ]);
  });

  test("a delete logs plant.deleted with the plant as it was, with or without an expected plant", async () => {
    const c = await changeLog();
    await c.stores.plants.createPlant(c.alice, { id: 1, name: "Fern", tag: "green" });
    await c.stores.plants.createPlant(c.alice, { id: 2, name: "Moss" });
    c.time.now = T0 + SECOND;
    expect(await c.stores.plants.deletePlant(c.alice, 1n)).toBe(true);
    expect(await c.stores.plants.deletePlant(c.alice, 2n, { name: "Moss" })).toBe(true);
    // Gone: a second delete logs nothing.
    expect(await c.stores.plants.deletePlant(c.alice, 1n)).toBe(false);
    // Created again after its delete: a new created change.
    await c.stores.plants.createPlant(c.alice, { id: 1, name: "Fern again" });
    const log = await c.log(c.alice);
    expect(log.map(shape)).toEqual([
      { type: "plant.created", id: 1n, plant: { name: "Fern", tag: "green" } },
      { type: "plant.created", id: 2n, plant: { name: "Moss" } },
      { type: "plant.deleted", id: 1n, plant: { name: "Fern", tag: "green" } },
      { type: "plant.deleted", id: 2n, plant: { name: "Moss" } },
      { type: "plant.created", id: 1n, plant: { name: "Fern again" } },
    ]);
    expect(log.slice(2, 4).map((change) => change.at)).toEqual([T0 + SECOND, T0 + SECOND]);
  });

  test("a keyed create logs once; its replay, and a keyed create of a taken id, log nothing", async () => {
    const c = await changeLog();
    const plant = { id: 5, name: "plant 5" };
    expect(await c.stores.plants.createPlantOnce(c.alice, plant, keyed("k5", 5))).toEqual({
      kind: "fresh",
      answer: { status: 200, body: '{"name":"plant 5"}', etag: '"5"' },
    });
    expect(await c.stores.plants.createPlantOnce(c.alice, plant, keyed("k5", 5))).toEqual({
      kind: "kept",
      answer: { status: 200, body: '{"name":"plant 5"}', etag: '"5"' },
      requestHash: "hash of k5",
    });
    // Another key for the id now taken: its kept answer is the 409, and no change.
    expect(await c.stores.plants.createPlantOnce(c.alice, plant, keyed("other", 5))).toEqual({
      kind: "fresh",
      answer: { status: 409, body: "taken" },
    });
    // Keyed and plain creates at once, then the keyed ones replayed: one change per plant.
    const once = (i: number) =>
      c.stores.plants.createPlantOnce(c.bob, { id: i, name: `plant ${i}` }, keyed(`k${i}`, i));
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => [
        once(i),
        c.stores.plants.createPlant(c.bob, { id: 100 + i, name: "plain" }),
      ]).flat(),
    );
    await Promise.all(Array.from({ length: 10 }, (_, i) => once(i)));
    expect((await c.log(c.alice)).map(shape)).toEqual([{ type: "plant.created", id: 5n, plant: { name: "plant 5" } }]);
    const bobs = await c.log(c.bob);
    expect(bobs.every((change) => change.type === "plant.created")).toBe(true);
    expect(bobs.map((change) => change.id).sort((a, b) => (a < b ? -1 : 1))).toEqual([
      ...Array.from({ length: 10 }, (_, i) => BigInt(i)),
      ...Array.from({ length: 10 }, (_, i) => BigInt(100 + i)),
    ]);
  });

  test("a write whose change cannot be logged is not made: the plant and its change stand or fall together", async () => {
    const c = await changeLog();
    await c.stores.plants.createPlant(c.alice, { id: 1, name: "Fern", tag: "green" });
    await c.stores.plants.createPlant(c.alice, { id: 2, name: "Moss" });
    // From now on the change log refuses every row, as a full disk would.
    await c.run(
      onPostgres
        ? `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no room'; END $$;
           CREATE TRIGGER refuse BEFORE INSERT ON plant_change_inbox FOR EACH ROW EXECUTE FUNCTION refuse()`
        : "CREATE TRIGGER refuse BEFORE INSERT ON plant_changes BEGIN SELECT RAISE(ABORT, 'no room'); END",
    );
    await expect(c.stores.plants.createPlant(c.alice, { id: 3, name: "Ivy" })).rejects.toThrow();
    await expect(
      c.stores.plants.createPlantOnce(c.alice, { id: 4, name: "plant 4" }, keyed("k4", 4)),
    ).rejects.toThrow();
    await expect(c.stores.plants.updatePlant(c.alice, 1n, { name: "Ivy" })).rejects.toThrow();
    await expect(
      c.stores.plants.updatePlant(c.alice, 1n, { name: "Ivy" }, { name: "Fern", tag: "green" }),
    ).rejects.toThrow();
    await expect(c.stores.plants.deletePlant(c.alice, 1n)).rejects.toThrow();
    await expect(c.stores.plants.deletePlant(c.alice, 2n, { name: "Moss" })).rejects.toThrow();
    // A write that logs nothing still goes through.
    expect(await c.stores.plants.updatePlant(c.alice, 1n, {})).toEqual({ name: "Fern", tag: "green" });
    await c.run(`DROP TRIGGER refuse${onPostgres ? " ON plant_change_inbox" : ""}`);
    // Nothing of the refused writes is there: the plants as they were, the key unused.
    expect(await c.stores.plants.getPlant(c.alice, 1n)).toEqual({ name: "Fern", tag: "green" });
    expect(await c.stores.plants.getPlant(c.alice, 2n)).toEqual({ name: "Moss" });
    expect(await c.stores.plants.getPlant(c.alice, 3n)).toBeUndefined();
    expect(await c.stores.plants.getPlant(c.alice, 4n)).toBeUndefined();
    expect((await c.log(c.alice)).map((change) => change.id)).toEqual([1n, 2n]);
    expect(await c.stores.plants.createPlantOnce(c.alice, { id: 4, name: "plant 4" }, keyed("k4", 4))).toMatchObject({
      kind: "fresh",
      answer: { status: 200 },
    });
    expect((await c.log(c.alice)).map((change) => change.id)).toEqual([1n, 2n, 4n]);
  });
});

describe(`seq, owners, newest and prunedThrough (${ENGINE})`, () => {
  test("seq grows strictly across owners; read gives one owner's changes, readAll every owner's in seq order", async () => {
    const c = await changeLog();
    const written: Array<[number, bigint]> = [];
    for (let i = 1; i <= 6; i++) {
      for (const owner of [c.alice, c.bob]) {
        await c.stores.plants.createPlant(owner, { id: i, name: `plant ${i}` });
        written.push([owner, BigInt(i)]);
      }
    }
    await c.stores.plants.updatePlant(c.bob, 1n, { name: "renamed" });
    written.push([c.bob, 1n]);
    await c.stores.plants.deletePlant(c.alice, 2n);
    written.push([c.alice, 2n]);
    const all = await c.all();
    expect(all.map((change) => [change.ownerId, change.id])).toEqual(written);
    expectIncreasing(all.map((change) => change.seq));
    expect(all[0]?.seq).toBeGreaterThan(0);
    for (const owner of [c.alice, c.bob]) {
      const page = await c.stores.changes.read(owner, 0n, 100);
      expect(page.changes).toEqual(all.filter((change) => change.ownerId === owner));
      expect(page).toMatchObject({ more: false, newest: page.changes.at(-1)?.seq, prunedThrough: 0 });
    }
    // Newest of every owner: the last change; carol, who never wrote, has none.
    expect(await c.stores.changes.newest()).toBe(all.at(-1)?.seq as number);
    expect(await c.stores.changes.read(c.carol, 0n, 100)).toEqual({
      changes: [],
      more: false,
      newest: 0,
      prunedThrough: 0,
    });
    // A user id nobody has: the same empty log.
    expect(await c.stores.changes.read(987_654, 0n, 100)).toEqual({
      changes: [],
      more: false,
      newest: 0,
      prunedThrough: 0,
    });
  });

  test("read pages by cursor: at most count, more while there are, newest the owner's newest on every page", async () => {
    const c = await changeLog();
    for (let i = 1; i <= 7; i++) {
      await c.stores.plants.createPlant(c.alice, { id: i, name: `plant ${i}` });
      await c.stores.plants.createPlant(c.bob, { id: i, name: `plant ${i}` });
    }
    const alices = await c.log(c.alice);
    const newest = alices.at(-1)?.seq as number;
    const pages: ChangePage[] = [];
    let cursor = 0n;
    for (;;) {
      const page = await c.stores.changes.read(c.alice, cursor, 3);
      pages.push(page);
      if (!page.more) break;
      cursor = BigInt(page.changes.at(-1)?.seq as number);
    }
    expect(pages.map((page) => page.changes.length)).toEqual([3, 3, 1]);
    expect(pages.map((page) => page.more)).toEqual([true, true, false]);
    expect(pages.every((page) => page.newest === newest && page.prunedThrough === 0)).toBe(true);
    expect(pages.flatMap((page) => page.changes)).toEqual(alices);
    // Exactly as many as there are: no more.
    expect((await c.stores.changes.read(c.alice, 0n, 7)).more).toBe(false);
    // count 0: nothing, but the cursor still says where the log is.
    expect(await c.stores.changes.read(c.alice, 0n, 0)).toMatchObject({ changes: [], newest, prunedThrough: 0 });
    // After the newest, or far past it: nothing, and the newest still.
    for (const after of [BigInt(newest), 2n ** 63n - 1n])
      expect(await c.stores.changes.read(c.alice, after, 10)).toEqual({
        changes: [],
        more: false,
        newest,
        prunedThrough: 0,
      });
    // readAll pages too: after a seq, at most count, every owner's.
    const all = await c.all();
    expect(await c.stores.changes.readAll(all[4]?.seq as number, 3)).toEqual(all.slice(5, 8));
    expect(await c.stores.changes.readAll(all.at(-1)?.seq as number, 3)).toEqual([]);
  });
});

describe(`pruning (${ENGINE})`, () => {
  test("prune removes the oldest changes older than before, in seq order, at most count, never the newest; prunedThrough per owner", async () => {
    const c = await changeLog();
    // a1 at T0, b1 at T0+1s, a2 at T0+2s, b2 at T0+3s, a3 at T0+4s.
    const plan = [c.alice, c.bob, c.alice, c.bob, c.alice];
    for (const [i, owner] of plan.entries()) {
      c.time.now = T0 + i * SECOND;
      await c.stores.plants.createPlant(owner, { id: i, name: `plant ${i}` });
    }
    const all = await c.all();
    expect(all).toHaveLength(5);
    const seq = all.map((change) => change.seq);
    const [s1, s2, s3, s4, s5] = seq as [number, number, number, number, number];
    expect(all.map((change) => change.at)).toEqual(plan.map((_, i) => T0 + i * SECOND));
    const mark = async (owner: number) => {
      const { prunedThrough, newest, changes } = await c.stores.changes.read(owner, 0n, 100);
      return { prunedThrough, newest, seqs: changes.map((change) => change.seq) };
    };

    // Older than T0+2.5s: a1, b1, a2; one at a time.
    const before = T0 + 2_500;
    expect(await c.stores.changes.prune(before, 1)).toBe(1);
    expect((await c.all()).map((change) => change.seq)).toEqual(seq.slice(1));
    expect(await mark(c.alice)).toEqual({ prunedThrough: s1, newest: s5, seqs: [s3, s5] });
    // Bob's changes were not pruned: his mark stays 0; carol's too.
    expect(await mark(c.bob)).toEqual({ prunedThrough: 0, newest: s4, seqs: [s2, s4] });
    expect(await mark(c.carol)).toEqual({ prunedThrough: 0, newest: 0, seqs: [] });
    // The rest older than `before`, and then nothing more.
    expect(await c.stores.changes.prune(before, 100)).toBe(2);
    expect(await c.stores.changes.prune(before, 100)).toBe(0);
    expect((await c.all()).map((change) => change.seq)).toEqual(seq.slice(3));
    expect(await mark(c.alice)).toEqual({ prunedThrough: s3, newest: s5, seqs: [s5] });
    expect(await mark(c.bob)).toEqual({ prunedThrough: s2, newest: s4, seqs: [s4] });
    // Exactly at `before` is not older than it.
    expect(await c.stores.changes.prune(T0 + 3 * SECOND, 100)).toBe(0);

    // Everything is old now: all but the newest change go.
    expect(await c.stores.changes.prune(T0 + 1_000 * SECOND, 100)).toBe(1);
    expect(await c.stores.changes.prune(T0 + 1_000 * SECOND, 100)).toBe(0);
    expect((await c.all()).map((change) => change.seq)).toEqual([s5]);
    // Bob has no change kept: his newest is the one pruned.
    expect(await mark(c.bob)).toEqual({ prunedThrough: s4, newest: s4, seqs: [] });
    expect(await mark(c.alice)).toEqual({ prunedThrough: s3, newest: s5, seqs: [s5] });
    expect(await c.stores.changes.newest()).toBe(s5);

    // The next write's seq is still past every earlier one, whoever writes it.
    c.time.now = T0 + 2_000 * SECOND;
    await c.stores.plants.createPlant(c.bob, { id: 99, name: "later" });
    await c.stores.changes.settle();
    const later = (await c.stores.changes.readAll(s5, 10))[0] as Change;
    expect(later).toMatchObject({ ownerId: c.bob, id: 99n, type: "plant.created" });
    expect(later.seq).toBeGreaterThan(Math.max(...seq));
    expect(await mark(c.bob)).toEqual({ prunedThrough: s4, newest: later.seq, seqs: [later.seq] });
    // And now the former newest may go, never the new one.
    expect(await c.stores.changes.prune(T0 + 3_000 * SECOND, 100)).toBe(1);
    expect((await c.all()).map((change) => change.seq)).toEqual([later.seq]);
    expect((await mark(c.alice)).prunedThrough).toBe(s5);
  });

  test("a prune in many small batches takes them in seq order until only the newest is left", async () => {
    const c = await changeLog();
    for (let i = 1; i <= 25; i++) {
      c.time.now = T0 + i * SECOND;
      await c.stores.plants.createPlant(i % 3 === 0 ? c.bob : c.alice, { id: i, name: `plant ${i}` });
    }
    const seq = (await c.all()).map((change) => change.seq);
    const taken: number[] = [];
    for (;;) {
      const pruned = await c.stores.changes.prune(T0 + 1_000 * SECOND, 4);
      if (pruned === 0) break;
      expect(pruned).toBeLessThanOrEqual(4);
      taken.push(pruned);
      // What is left is always the newest ones, in order.
      expect((await c.all()).map((change) => change.seq)).toEqual(seq.slice(taken.reduce((a, b) => a + b, 0)));
    }
    expect(taken).toEqual([4, 4, 4, 4, 4, 4]);
    expect((await c.all()).map((change) => change.seq)).toEqual([seq.at(-1) as number]);
    // Bob wrote every third (the 24th the last of his), alice the rest, the newest (25th) too.
    expect((await c.stores.changes.read(c.bob, 0n, 10)).prunedThrough).toBe(seq[23] as number);
    expect((await c.stores.changes.read(c.alice, 0n, 10)).prunedThrough).toBe(seq[22] as number);
  });
});

describe(`a field of Plant reaches the change log from the schema alone (${ENGINE})`, () => {
  const LOG_OWN = { sqlite: ["seq", "ownerId", "type", "at"], postgres: ["seq", "ownerId", "type", "at"] };
  const schemas = { sqlite: sqliteSchema, postgres: postgresSchema } as const;

  const columnsOf = (table: Table) =>
    Object.fromEntries(
      Object.entries(getTableColumns(table)).map(([field, column]) => [
        field,
        { name: column.name, type: column.getSQLType(), notNull: column.notNull },
      ]),
    );

  for (const engine of ["sqlite", "postgres"] as const) {
    test(`${engine}: plant_changes has the plants table's columns (but owner_id) as its plant, with the same types`, () => {
      const plants = columnsOf(schemas[engine].plants);
      const changes = columnsOf(schemas[engine].plantChanges);
      const own = LOG_OWN[engine];
      for (const field of own) expect(changes).toHaveProperty(field);
      const plantPart = Object.fromEntries(Object.entries(changes).filter(([field]) => !own.includes(field)));
      const { ownerId, ...plantColumns } = plants;
      expect(ownerId).toBeDefined();
      expect(plantPart).toEqual(plantColumns);
      expect(Object.keys(plantColumns)).toContain("id");
      // The owner's column is the log's own: it has one, of the same type.
      expect(changes.ownerId).toEqual(ownerId as (typeof changes)[string]);
    });
  }

  test("postgres: the inbox where changes wait holds the log's columns, its seq aside", () => {
    const { pos, ...inbox } = columnsOf(postgresSchema.plantChangeInbox);
    const { seq, ...log } = columnsOf(postgresSchema.plantChanges);
    expect(pos).toBeDefined();
    expect(seq).toBeDefined();
    expect(inbox).toEqual(log);
  });

  test("the stores' value fields are the model's (src/plants/model.ts), on both engines", () => {
    const model = [...VALUE_FIELDS].sort();
    expect(SQLITE_VALUE_FIELDS.map(({ field }) => field).sort()).toEqual(model);
    expect(POSTGRES_VALUE_FIELDS.map(({ field }) => field).sort()).toEqual(model);
    expect(PLANT_FIELDS).toEqual(["id", ...VALUE_FIELDS]);
  });

  test("a change read back carries every value field of the plant, after a create, an update and a delete", async () => {
    const c = await changeLog();
    const valued = (suffix: string) =>
      Object.fromEntries(VALUE_FIELDS.map((field) => [field, `${field} ${suffix}`])) as unknown as Plant;
    const first = valued("first");
    const second = valued("second");
    await c.stores.plants.createPlant(c.alice, { id: 7, ...first });
    await c.stores.plants.updatePlant(c.alice, 7n, second);
    await c.stores.plants.deletePlant(c.alice, 7n, second);
    const log = await c.log(c.alice);
    expect(log.map((change) => change.plant)).toEqual([first, second, second]);
    for (const change of log) {
      expect(Object.keys(change.plant).sort()).toEqual([...VALUE_FIELDS].sort());
      // As the feed shows it: every field of the model, id first, each value as stored.
      const shown = JSON.parse(changeJson(change)) as { data: Record<string, unknown> };
      expect(Object.keys(shown.data)).toEqual(PLANT_FIELDS);
      expect(shown.data).toEqual({ id: 7, ...change.plant });
    }
  });
});

describe.if(onPostgres)("ordering under a late commit (postgres)", () => {
  test("a change committed after later ones is given a larger seq than every seq shown before, never a smaller one", async () => {
    const c = await changeLog();
    const url = c.postgresUrl as string;
    const held = new SQL(url, { max: 1 });
    sessions.push(held);
    const look = new SQL(url, { max: 1 });
    sessions.push(look);
    await c.stores.plants.createPlant(c.alice, { id: 1, name: "first" });
    expect((await c.log(c.alice)).length).toBe(1);

    // Another session writes a plant and its change exactly as the store's create does, and holds it open.
    await held.unsafe("BEGIN");
    const json = JSON.stringify([{ owner_id: c.alice, id: "100", name: "late", tag: null }]);
    expect(await held.unsafe(PLANT_SQL.writeGroup, [json, T0, "[]"])).toHaveLength(1);
    const [heldRow] = (await held.unsafe("SELECT pos::float8 AS pos FROM plant_change_inbox WHERE id = 100")) as Array<{
      pos: number;
    }>;
    expect(heldRow?.pos).toBeGreaterThan(0);

    // Meanwhile plants are written and read (each read stamps what is waiting), by both owners.
    const shown: Change[] = [];
    let cursor = 0n;
    const follow = async () => {
      const page = await c.stores.changes.read(c.alice, cursor, 1000);
      shown.push(...page.changes);
      if (page.changes.length > 0) cursor = BigInt(page.changes.at(-1)?.seq as number);
      return page;
    };
    for (let i = 2; i <= 6; i++) {
      await c.stores.plants.createPlant(c.alice, { id: i, name: `plant ${i}` });
      await c.stores.plants.createPlant(c.bob, { id: i, name: `plant ${i}` });
      await follow();
      await c.stores.changes.readAll(0, 1000);
    }
    await c.stores.plants.updatePlant(c.alice, 1n, { name: "renamed" });
    await follow();
    const before = await c.all();
    // The held change is not visible, and did not hold the later ones back: they are all there.
    expect(before.map((change) => change.id)).not.toContain(100n);
    expect(shown.map((change) => change.id)).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 1n]);
    expect(before).toHaveLength(12);
    expectIncreasing(before.map((change) => change.seq));
    // Each later change was written after the held one (a larger pos), and got its seq first: none waits.
    const [{ n: waiting }] = (await look.unsafe("SELECT count(*)::int AS n FROM plant_change_inbox")) as [
      { n: number },
    ];
    expect(waiting).toBe(0);
    expect(before.length - 1).toBe(11);
    const highest = Math.max(...before.map((change) => change.seq));

    await held.unsafe("COMMIT");
    // The next read finds it: past the cursor, its seq larger than every seq seen before.
    const page = await follow();
    expect(page.changes.map(shape)).toEqual([{ type: "plant.created", id: 100n, plant: { name: "late" } }]);
    const late = page.changes[0] as Change;
    expect(late.seq).toBeGreaterThan(highest);
    expect(late.at).toBe(T0);
    // Every reader sees the same: one order, each change once, the late one after all the others.
    const after = await c.all();
    expect(after.slice(0, -1)).toEqual(before);
    expect(after.at(-1)).toEqual(late);
    expectIncreasing(after.map((change) => change.seq));
    // And what comes next comes after it.
    await c.stores.plants.createPlant(c.alice, { id: 7, name: "plant 7" });
    const next = await follow();
    expect(next.changes.map((change) => change.id)).toEqual([7n]);
    expect(next.changes[0]?.seq).toBeGreaterThan(late.seq);
    expectIncreasing(shown.map((change) => change.seq));
    expect(new Set(shown.map((change) => change.seq)).size).toBe(shown.length);
  });

  test("a held change rolled back never appears, and leaves no hole a reader waits on", async () => {
    const c = await changeLog();
    const held = new SQL(c.postgresUrl as string, { max: 1 });
    sessions.push(held);
    await held.unsafe("BEGIN");
    const json = JSON.stringify([{ owner_id: c.alice, id: "100", name: "never", tag: null }]);
    await held.unsafe(PLANT_SQL.writeGroup, [json, T0, "[]"]);
    await c.stores.plants.createPlant(c.alice, { id: 1, name: "one" });
    const first = await c.log(c.alice);
    expect(first.map((change) => change.id)).toEqual([1n]);
    await held.unsafe("ROLLBACK");
    await c.stores.plants.createPlant(c.alice, { id: 2, name: "two" });
    const log = await c.log(c.alice);
    expect(log.map((change) => change.id)).toEqual([1n, 2n]);
    expect(log[1]?.seq).toBeGreaterThan(log[0]?.seq as number);
  });
});

describe.if(onPostgres)("two instances writing while a reader follows (postgres)", () => {
  test("a reader polling by cursor sees every change of both instances exactly once, in increasing seq", async () => {
    const c = await changeLog();
    const other: Stores = createPostgresStores(connect(postgresTarget(c.postgresUrl as string), 4).client, {
      log: () => {},
      poolSize: 4,
    });
    openedStores.add(other);
    const instances = [c.stores, other];
    const owners = [c.alice, c.bob];
    const successes = new Map(owners.map((owner) => [owner, 0]));
    const count = (owner: number, ok: boolean) => {
      if (ok) successes.set(owner, (successes.get(owner) as number) + 1);
    };
    const PLANTS = 120;
    const WAVE = 8;

    /** One plant's life: both instances create it, both rename it, and every third one both delete. */
    async function life(owner: number, id: number) {
      const [a, b] = instances as [Stores, Stores];
      const plant = { id, name: `plant ${id}` };
      const created = await Promise.all([a.plants.createPlant(owner, plant), b.plants.createPlant(owner, plant)]);
      expect(created.filter(Boolean)).toHaveLength(1);
      for (const ok of created) count(owner, ok !== undefined);
      const renamed = await Promise.all(
        instances.map((instance, i) => instance.plants.updatePlant(owner, BigInt(id), { name: `renamed ${i} ${id}` })),
      );
      for (const ok of renamed) count(owner, ok !== undefined);
      if (id % 3 !== 0) return;
      const deleted = await Promise.all(instances.map((instance) => instance.plants.deletePlant(owner, BigInt(id))));
      expect(deleted.filter(Boolean)).toHaveLength(1);
      for (const ok of deleted) count(owner, ok);
    }

    let writing = true;
    /** Follows one owner's log by cursor, through both instances in turn, until the writes are done and a read is empty. */
    async function reader(owner: number) {
      const seen: Change[] = [];
      let cursor = 0n;
      for (let turn = 0; ; turn++) {
        const done = !writing;
        const page = await (instances[turn % 2] as Stores).changes.read(owner, cursor, 50);
        expect(page.changes.length).toBeLessThanOrEqual(50);
        for (const change of page.changes) {
          expect(change.ownerId).toBe(owner);
          expect(BigInt(change.seq)).toBeGreaterThan(cursor);
          cursor = BigInt(change.seq);
          seen.push(change);
        }
        if (done && page.changes.length === 0) return seen;
      }
    }

    const readers = owners.map(reader);
    // In waves of a few plants at once, so the readers' polls fall between and among the writes.
    try {
      for (let first = 1; first <= PLANTS; first += WAVE) {
        const wave = Array.from({ length: Math.min(WAVE, PLANTS - first + 1) }, (_, i) => first + i);
        await Promise.all(owners.flatMap((owner) => wave.map((id) => life(owner, id))));
      }
    } finally {
      writing = false;
    }
    const seenByOwner = await Promise.all(readers);

    const all = await c.all();
    for (const [i, owner] of owners.entries()) {
      const seen = seenByOwner[i] as Change[];
      const seqs = seen.map((change) => change.seq);
      expectIncreasing(seqs);
      expect(new Set(seqs).size).toBe(seen.length);
      // Per plant: 1 create, 2 renames, and a delete for every third.
      expect(seen.length).toBe(successes.get(owner) as number);
      expect(seen.length).toBe(PLANTS * 3 + Math.floor(PLANTS / 3));
      // Exactly the owner's log as it is now.
      expect(seen).toEqual(all.filter((change) => change.ownerId === owner));
      // Applied in order, the changes give the plants as they are.
      const replayed = new Map<bigint, Plant>();
      for (const change of seen) {
        if (change.type === "plant.deleted") replayed.delete(change.id);
        else replayed.set(change.id, change.plant);
      }
      const page = await c.stores.plants.listPage(owner, {}, 1000, undefined, true);
      expect(new Map(page.ids?.map((id, k) => [id, page.plants[k]]))).toEqual(replayed);
    }
    expectIncreasing(all.map((change) => change.seq));
    // Both instances read the same log.
    await other.changes.settle();
    expect(await other.changes.readAll(0, 100_000)).toEqual(all);
  });
});

describe.if(onPostgres)("the webhook dispatcher and the live feed stamp only changes left behind (postgres)", () => {
  test("another instance's fresh changes wait for its own stamp; those of an instance stopped before it, a second", async () => {
    const c = await changeLog();
    const url = c.postgresUrl as string;
    const writer = new SQL(url, { max: 1 });
    sessions.push(writer);
    // An instance's create as the store writes it, its stamp never run: it stopped, or has not stamped yet.
    const write = (id: number) =>
      writer.unsafe(PLANT_SQL.writeGroup, [
        JSON.stringify([{ owner_id: c.alice, id: String(id), name: `plant ${id}`, tag: null }]),
        c.time.now,
        "[]",
      ]);
    const waiting = async () =>
      ((await writer.unsafe("SELECT count(*)::int AS n FROM plant_change_inbox")) as [{ n: number }])[0].n;
    // The live feed's read follows the same rule.
    const followers = [() => c.stores.changes.settle(true), () => c.stores.changes.readAll(0, 1)];
    let turn = 0;
    const follow = () => (followers[turn++ % 2] as () => Promise<unknown>)();

    await write(1);
    await follow();
    c.time.now += 999;
    await follow();
    expect(await waiting()).toBe(1);
    // Its writer would have stamped it by now: it was left behind.
    c.time.now += 1;
    await follow();
    expect(await waiting()).toBe(0);
    expect((await c.all()).map((change) => change.id)).toEqual([1n]);

    // While an instance writes and stamps, the oldest row waiting is always a new one: never stamped here.
    for (let id = 2; id <= 4; id++) {
      await write(id);
      await follow();
      c.time.now += 5_000;
      await c.stores.changes.read(c.bob, 0n, 1);
      expect(await waiting()).toBe(0);
    }
    await write(5);
    await follow();
    c.time.now += 5_000;
    expect(await waiting()).toBe(1);
    // A reader stamps what waits at once: it reads after every change committed before it.
    await c.stores.changes.settle();
    expect(await waiting()).toBe(0);
    expect((await c.all()).map((change) => change.id)).toEqual([1n, 2n, 3n, 4n, 5n]);
  });

  test("while stamps are heard they do not look: every stamp takes the oldest rows first", async () => {
    const c = await changeLog();
    const writer = new SQL(c.postgresUrl as string, { max: 1 });
    sessions.push(writer);
    let wakes = 0;
    const stop = await c.stores.changes.watch(() => wakes++);
    // Another instance's stamp, as its NOTIFY: heard here at the store's clock.
    const stampHeard = async () => {
      const before = wakes;
      await writer.unsafe("SELECT pg_notify('plant_changes', '')");
      await until(() => wakes > before, { what: "the NOTIFY" });
    };
    const waiting = async () =>
      ((await writer.unsafe("SELECT count(*)::int AS n FROM plant_change_inbox")) as [{ n: number }])[0].n;
    try {
      await writer.unsafe(PLANT_SQL.writeGroup, [
        JSON.stringify([{ owner_id: c.alice, id: "1", name: "left behind", tag: null }]),
        c.time.now,
        "[]",
      ]);
      await stampHeard();
      await c.stores.changes.settle(true);
      c.time.now += SECOND;
      // A second without a stamp heard: it looks, and sees the row for the first time.
      await c.stores.changes.settle(true);
      c.time.now += SECOND;
      await stampHeard();
      // The row has waited a second since first seen, but a stamp was just heard: not looked at.
      await c.stores.changes.settle(true);
      await c.stores.changes.readAll(0, 1);
      expect(await waiting()).toBe(1);
      c.time.now += SECOND;
      await c.stores.changes.settle(true);
      expect(await waiting()).toBe(0);
      expect((await c.all()).map((change) => change.id)).toEqual([1n]);
    } finally {
      await stop();
    }
  });
});
