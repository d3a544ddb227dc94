/**
 * The webhook fan-out (src/webhooks/fan-out.ts) on the real stores (SPEC, "Every change is an
 * event": "Webhooks follow the same log", "One source", "Details"): each endpoint's owner's
 * changes become its deliveries, in seq order, exactly once (two fan-outs at once, and on
 * PostgreSQL two instances); an endpoint with `events` gets those changes as the change itself,
 * one without only created plants as their NewPlant; a resting endpoint's changes wait while a
 * read of its log fans them out; the change log keeps what an endpoint has not had yet. What a
 * client sees over HTTP, and a real delivery, are in tests/api/webhook-events.test.ts.
 */

import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { changeJson } from "../../src/changes/model";
import { CHANGE_TYPES, type Change, type ChangeType } from "../../src/core/changes";
import type { Plant } from "../../src/core/plant";
import type { ClaimedDelivery, Stores, WebhookStore } from "../../src/core/stores";
import { connect } from "../../src/db/postgres/client";
import { createPostgresStores } from "../../src/db/postgres/stores";
import { PLANT_FIELDS, plantModels, VALUE_FIELDS } from "../../src/plants/model";
import { bodyFor, createFanOut, type FanOut } from "../../src/webhooks/fan-out";
import { ENGINE, freshStores, makeTestApp, onPostgres, openedStores, postgresTarget } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { userWithToken } from "../support/users";
import { claimer } from "../support/webhook-receiver";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const MAX = 2n ** 63n - 1n;
const HOUR = 3_600_000;
/** A circuit that never opens. */
const NO_CIRCUIT = { failures: 1_000_000, restMs: 0 };
const CHANGE_KEYS = ["seq", "type", "timestamp", "data"];

const sessions: SQL[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
});

/** Statements written for both engines on the database as it is: SQLite's handle, or a session of its own. */
function sqlOn(sqlite: { run(sql: string): unknown; query(sql: string): { get(): unknown } }, url?: string) {
  const session = url === undefined ? undefined : new SQL(url, { max: 1 });
  if (session) sessions.push(session);
  return {
    run: async (sql: string) => {
      if (session) await session.unsafe(sql);
      else sqlite.run(sql);
    },
    count: async (sql: string): Promise<number> => {
      const rows = session
        ? ((await session.unsafe(sql)) as Array<{ n: number }>)
        : [sqlite.query(sql).get() as { n: number }];
      return Number(rows[0]?.n);
    },
    /** An engine's "now" for a timestamp column. */
    now: session ? "now()" : String(Date.now()),
  };
}

const claimers = new WeakMap<Stores, ReturnType<typeof claimer>>();

/** Claims every due delivery, as one dispatcher: by endpoint, in the order claimed (oldest first). */
async function claimAll(stores: Stores, circuit = NO_CIRCUIT): Promise<Map<number, ClaimedDelivery[]>> {
  const claim = claimers.get(stores) ?? claimer(stores.webhooks);
  claimers.set(stores, claim);
  const claimed = await claim({
    count: 100_000,
    leaseMs: HOUR,
    perEndpoint: 100_000,
    busy: new Map(),
    circuit,
  });
  const byEndpoint = new Map<number, ClaimedDelivery[]>();
  for (const delivery of claimed.sort((a, b) => a.seq - b.seq)) {
    byEndpoint.set(delivery.webhookId, [...(byEndpoint.get(delivery.webhookId) ?? []), delivery]);
  }
  return byEndpoint;
}

/** Runs `due` until it finds nothing left; the changes it took in all. */
async function drain(fanOut: FanOut, budget?: number): Promise<number> {
  let total = 0;
  for (;;) {
    const taken = await fanOut.due(NO_CIRCUIT.failures, budget);
    if (taken === 0) return total;
    total += taken;
  }
}

/** `webhooks` with each fan-out that found its cursor already moved (by another fan-out) counted in `lost`. */
function countingLosses(webhooks: WebhookStore, lost: { count: number }): WebhookStore {
  return {
    ...webhooks,
    async fanOut(...args) {
      const moved = await webhooks.fanOut(...args);
      if (!moved) lost.count++;
      return moved;
    },
  };
}

/** The plant id of a NewPlant body (small ids only). */
const plantOf = (delivery: ClaimedDelivery) => (JSON.parse(delivery.payload) as { id: number }).id;

/**
 * Stores on a fresh database (the clock is the real one: PostgreSQL claims by its own), users
 * alice, bob and carol, a fan-out on the stores, and ways to register endpoints and read logs.
 */
async function fanOutStores() {
  const fresh = await freshStores({
    clock: Date.now,
    log: () => {},
    maxQueued: 1024,
    lockTimeoutMs: 5_000,
    limiterWaitMs: 60_000,
  });
  const { stores } = fresh;
  const [alice, bob, carol] = (await Promise.all(
    ["alice", "bob", "carol"].map(async (name) => (await userWithToken(stores.tokens, name)).id),
  )) as [number, number, number];
  let registered = 0;
  return {
    ...fresh,
    ...sqlOn(fresh.sqlite, fresh.postgresUrl),
    stores,
    alice,
    bob,
    carol,
    fanOut: createFanOut(stores.webhooks, stores.changes),
    /** A new endpoint of `owner` (nothing listens there); its id. */
    async register(owner: number, events?: ChangeType[]) {
      const made = await stores.webhooks.register(
        owner,
        `http://127.0.0.1:9/e${++registered}`,
        "whsec_c2VjcmV0",
        10,
        events,
      );
      if (!made) throw new Error("no room for an endpoint");
      return made.id;
    },
    /** The endpoint's delivery log as the store lists it, oldest first (no fan-out first). */
    async log(owner: number, endpoint: number) {
      const page = await stores.webhooks.deliveries(owner, endpoint, undefined, 100_000);
      if (typeof page === "string") throw new Error(page);
      return page.deliveries;
    },
    /** Every change of `owner`, oldest first. */
    changes: async (owner: number) => (await stores.changes.read(owner, 0n, 100_000)).changes,
  };
}

describe(`what an endpoint is sent (${ENGINE})`, () => {
  test("a create, a changing update and a delete reach an endpoint with every event as three deliveries in seq order, each body exactly the change", async () => {
    const f = await fanOutStores();
    const all = await f.register(f.alice, [...CHANGE_TYPES]);
    await f.stores.plants.createPlant(f.alice, { id: 1, name: "Fern", tag: "green" });
    // Another owner's change between them: not alice's endpoint's.
    await f.stores.plants.createPlant(f.bob, { id: 1, name: "Bob's" });
    expect(await f.stores.plants.updatePlant(f.alice, 1n, { name: "Ivy" })).toEqual({ name: "Ivy", tag: "green" });
    expect(await f.stores.plants.deletePlant(f.alice, 1n)).toBe(true);
    expect(await drain(f.fanOut)).toBe(3);

    const changes = await f.changes(f.alice);
    expect(changes.map((change) => change.type)).toEqual(["plant.created", "plant.updated", "plant.deleted"]);
    const claimed = (await claimAll(f.stores)).get(all) ?? [];
    expect(claimed).toHaveLength(3);
    for (const [i, delivery] of claimed.entries()) {
      const change = changes[i] as Change;
      expect(delivery.payload).toBe(changeJson(change));
      const body = JSON.parse(delivery.payload) as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(CHANGE_KEYS);
      expect(body.seq).toBe(change.seq);
      expect(body.type).toBe(change.type);
      expect(body.timestamp).toBe(new Date(change.at).toISOString());
      expect(body.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(body.data).toEqual({ id: 1, ...change.plant });
      // Its webhook-id: msg_, the change's time in ms as 12 hex digits, 20 random hex digits.
      expect(delivery.id).toMatch(/^msg_[0-9a-f]{32}$/);
      expect(delivery.id.slice(4, 16)).toBe(change.at.toString(16).padStart(12, "0"));
    }
    expect(claimed.map((delivery) => (JSON.parse(delivery.payload) as { data: unknown }).data)).toEqual([
      { id: 1, name: "Fern", tag: "green" },
      { id: 1, name: "Ivy", tag: "green" },
      { id: 1, name: "Ivy", tag: "green" },
    ]);
    // The log lists them in the same order, each with its type.
    const log = await f.log(f.alice, all);
    expect(log.map((d) => [d.id, d.type])).toEqual(claimed.map((d, i) => [d.id, changes[i]?.type as string]));
  });

  test("an endpoint without events gets only creates, each body exactly the NewPlant (an int64 id exact); one with [plant.deleted] only deletes", async () => {
    const f = await fanOutStores();
    const plain = await f.register(f.alice);
    const deletes = await f.register(f.alice, ["plant.deleted"]);
    await f.stores.plants.createPlant(f.alice, { id: MAX, name: "Max", tag: "t" });
    await f.stores.plants.createPlant(f.alice, { id: 2, name: "Moss" });
    await f.stores.plants.updatePlant(f.alice, MAX, { tag: null });
    await f.stores.plants.updatePlant(f.alice, 2n, { name: "Moss 2", tag: "" });
    await f.stores.plants.deletePlant(f.alice, MAX);
    await f.stores.plants.deletePlant(f.alice, 2n);
    await drain(f.fanOut);

    const claimed = await claimAll(f.stores);
    expect((claimed.get(plain) ?? []).map((d) => d.payload)).toEqual([
      '{"id":9223372036854775807,"name":"Max","tag":"t"}',
      '{"id":2,"name":"Moss"}',
    ]);
    const deleted = (await f.changes(f.alice)).filter((change) => change.type === "plant.deleted");
    expect((claimed.get(deletes) ?? []).map((d) => d.payload)).toEqual(deleted.map(changeJson));
    // The plant as it was, its id written exactly.
    expect(claimed.get(deletes)?.[0]?.payload).toContain('"data":{"id":9223372036854775807,"name":"Max"}');
    expect(claimed.get(deletes)?.[1]?.payload).toContain('"data":{"id":2,"name":"Moss 2","tag":""}');
    expect((await f.log(f.alice, plain)).map((d) => d.type)).toEqual(["plant.created", "plant.created"]);
    expect((await f.log(f.alice, deletes)).map((d) => d.type)).toEqual(["plant.deleted", "plant.deleted"]);
  });

  test("no-op updates and refused writes give no delivery", async () => {
    const f = await fanOutStores();
    const all = await f.register(f.alice, [...CHANGE_TYPES]);
    const plain = await f.register(f.alice);
    const fern = { name: "Fern", tag: "green" };
    await f.stores.plants.createPlant(f.alice, { id: 1, ...fern });
    await f.stores.plants.createPlant(f.alice, { id: 2, name: "Moss" });
    expect(await drain(f.fanOut)).toBe(4);
    expect([...(await claimAll(f.stores)).values()].map((list) => list.length)).toEqual([2, 2]);

    // Updates to the values the plant has.
    expect(await f.stores.plants.updatePlant(f.alice, 1n, {})).toEqual(fern);
    expect(await f.stores.plants.updatePlant(f.alice, 1n, { name: "Fern" })).toEqual(fern);
    expect(await f.stores.plants.updatePlant(f.alice, 1n, { name: "Fern", tag: "green" }, fern)).toEqual(fern);
    expect(await f.stores.plants.updatePlant(f.alice, 2n, { tag: null })).toEqual({ name: "Moss" });
    // Refused: a taken id, a stale expected plant, a missing plant, another owner's.
    expect(await f.stores.plants.createPlant(f.alice, { id: 1, name: "Other" })).toBeUndefined();
    expect(await f.stores.plants.updatePlant(f.alice, 1n, { name: "Ivy" }, { name: "Fern" })).toBeUndefined();
    expect(await f.stores.plants.deletePlant(f.alice, 1n, { name: "Fern" })).toBe(false);
    expect(await f.stores.plants.updatePlant(f.alice, 9n, { name: "Ivy" })).toBeUndefined();
    expect(await f.stores.plants.deletePlant(f.alice, 9n)).toBe(false);
    expect(await f.stores.plants.updatePlant(f.bob, 1n, { name: "Ivy" })).toBeUndefined();
    expect(await f.stores.plants.deletePlant(f.bob, 1n)).toBe(false);

    expect(await drain(f.fanOut)).toBe(0);
    await f.fanOut.owner(f.alice);
    expect(await claimAll(f.stores)).toEqual(new Map());
    expect((await f.log(f.alice, all)).length).toBe(2);
    expect((await f.log(f.alice, plain)).length).toBe(2);
    expect(await f.count("SELECT count(*) AS n FROM webhook_deliveries")).toBe(4);
  });

  test("an endpoint registered after a change gets none of it, one deleted before the fan-out none; later changes go to both", async () => {
    const f = await fanOutStores();
    const early = await f.register(f.alice);
    const gone = await f.register(f.alice, [...CHANGE_TYPES]);
    await f.stores.plants.createPlant(f.alice, { id: 1, name: "Fern" });
    await f.stores.plants.createPlant(f.alice, { id: 2, name: "Ivy" });
    await f.stores.plants.updatePlant(f.alice, 1n, { name: "Fern 2" });
    const late = await f.register(f.alice);
    const lateAll = await f.register(f.alice, [...CHANGE_TYPES]);
    expect(await f.stores.webhooks.remove(f.alice, gone)).toBe(true);
    // Nothing was fanned out yet: the changes wait in the log, and the fan-out finds them.
    expect(await f.count("SELECT count(*) AS n FROM webhook_deliveries")).toBe(0);
    await drain(f.fanOut);
    const first = await claimAll(f.stores);
    expect([...first.keys()]).toEqual([early]);
    expect(first.get(early)?.map(plantOf)).toEqual([1, 2]);

    await f.stores.plants.createPlant(f.alice, { id: 3, name: "Moss" });
    await f.stores.plants.deletePlant(f.alice, 2n);
    await drain(f.fanOut);
    const later = await claimAll(f.stores);
    expect([...later.keys()].sort((a, b) => a - b)).toEqual([early, late, lateAll]);
    expect(later.get(early)?.map(plantOf)).toEqual([3]);
    expect(later.get(late)?.map(plantOf)).toEqual([3]);
    expect(later.get(lateAll)?.map((d) => (JSON.parse(d.payload) as { type: string }).type)).toEqual([
      "plant.created",
      "plant.deleted",
    ]);
  });
});

describe(`when changes become deliveries (${ENGINE})`, () => {
  test("while an endpoint rests with deliveries pending its changes wait; a read of its log fans them out, whatever its circuit; a disabled one gets none", async () => {
    const f = await fanOutStores();
    const circuit = { failures: 5, restMs: 30_000 };
    const endpoint = await f.register(f.alice);
    await f.stores.plants.createPlant(f.alice, { id: 1, name: "Fern" });
    expect(await f.fanOut.due(circuit.failures)).toBe(1);
    expect((await claimAll(f.stores, circuit)).get(endpoint)?.map(plantOf)).toEqual([1]);
    // Its circuit opens (5 failures in a row, just now); the claimed delivery is still pending.
    await f.run(`UPDATE webhooks SET consecutive_failures = 5, last_failed_at = ${f.now}`);
    for (let id = 2; id <= 4; id++) await f.stores.plants.createPlant(f.alice, { id, name: `p${id}` });
    expect(await f.fanOut.due(circuit.failures)).toBe(0);
    expect(await claimAll(f.stores, circuit)).toEqual(new Map());
    expect(await f.count("SELECT count(*) AS n FROM webhook_deliveries")).toBe(1);
    // The pending count counts deliveries only: the waiting changes are not in it.
    expect(await f.stores.webhooks.pendingCount()).toBe(1);
    // The owner reads the log: every change's delivery is in it, in order.
    await f.fanOut.owner(f.alice);
    const log = await f.log(f.alice, endpoint);
    expect(log.map((d) => d.type)).toEqual(Array(4).fill("plant.created"));
    expect(await f.stores.webhooks.pendingCount()).toBe(4);
    await f.stores.plants.createPlant(f.alice, { id: 5, name: "Moss" });
    expect(await f.fanOut.due(circuit.failures)).toBe(0);
    // A 2xx closes the circuit: the next fan-out takes what waited, and the claim takes it with the rest.
    await f.run("UPDATE webhooks SET consecutive_failures = 0");
    expect(await f.fanOut.due(circuit.failures)).toBe(1);
    expect((await claimAll(f.stores, circuit)).get(endpoint)?.map(plantOf)).toEqual([2, 3, 4, 5]);

    // An endpoint resting with nothing pending takes its changes (its one probe can be among them).
    await f.run(`UPDATE webhook_deliveries SET status = 'delivered', next_attempt_at = NULL`);
    await f.run(`UPDATE webhooks SET consecutive_failures = 5, last_failed_at = ${f.now}`);
    await f.stores.plants.createPlant(f.alice, { id: 6, name: "Ivy" });
    expect(await f.fanOut.due(circuit.failures)).toBe(1);
    expect((await f.log(f.alice, endpoint)).length).toBe(6);

    // A disabled endpoint (it answered 410) gets nothing more, from either.
    await f.run(`UPDATE webhooks SET disabled_at = ${f.now}`);
    await f.stores.plants.createPlant(f.alice, { id: 7, name: "Moss" });
    expect(await f.fanOut.due(circuit.failures)).toBe(0);
    await f.fanOut.owner(f.alice);
    expect((await f.log(f.alice, endpoint)).length).toBe(6);
  });

  test("a fan-out that cannot write does not fail the log read: 200 with what is there; its changes and cursor wait for a later one", async () => {
    const t = await makeTestApp({ webhookAllowPrivate: true });
    const db = sqlOn(t.sqlite, t.postgresUrl);
    const alice = await t.user("alice");
    const response = await t.call("POST", "/webhooks", { token: alice.token, json: { url: "http://127.0.0.1:9/a" } });
    expect(response.status).toBe(201);
    const { id: endpoint } = (await response.json()) as { id: number };
    const read = async () => {
      const log = await t.call("GET", `/webhooks/${endpoint}/deliveries`, { token: alice.token });
      expect(log.status).toBe(200);
      return (await log.json()) as Array<{ type: string }>;
    };
    await t.createPlant("1", "Fern", alice.token);
    expect((await read()).length).toBe(1);
    const [first] = (await t.stores.changes.read(alice.id, 0n, 10)).changes;
    await t.createPlant("2", "Ivy", alice.token);
    // Every fan-out now fails, as on a full disk: a delivery cannot be written.
    await db.run(
      onPostgres
        ? `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no room'; END $$;
           CREATE TRIGGER refuse BEFORE INSERT ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION refuse()`
        : "CREATE TRIGGER refuse BEFORE INSERT ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'no room'); END",
    );
    expect((await read()).length).toBe(1);
    // The dispatcher's fan-out fails too, and moves nothing: the cursor stands with the deliveries.
    await expect(createFanOut(t.stores.webhooks, t.stores.changes).due(5)).rejects.toThrow();
    expect(await db.count(`SELECT change_cursor AS n FROM webhooks WHERE id = ${endpoint}`)).toBe(first?.seq as number);
    // Once the fan-out can write again, the next read shows the waiting plant's delivery.
    await db.run(
      onPostgres ? "DROP TRIGGER refuse ON webhook_deliveries; DROP FUNCTION refuse()" : "DROP TRIGGER refuse",
    );
    expect(await read()).toMatchObject([{ type: "plant.created" }, { type: "plant.created" }]);
  });

  test("deliveries due at the same instant are claimed oldest first, wherever their rows sit", async () => {
    const f = await fanOutStores();
    const endpoint = await f.register(f.alice);
    for (let id = 1; id <= 3; id++) await f.stores.plants.createPlant(f.alice, { id, name: `p${id}` });
    await f.fanOut.owner(f.alice);
    expect((await f.log(f.alice, endpoint)).length).toBe(3);
    // All due at one instant; then the oldest row is written twice, which moves it to the table's end.
    const [instant, later] = onPostgres ? ["'2000-01-01 00:00:00+00'", "'2000-01-01 00:00:01+00'"] : ["0", "1"];
    await f.run(`UPDATE webhook_deliveries SET next_attempt_at = ${instant}`);
    const oldest = "(SELECT min(seq) FROM webhook_deliveries)";
    await f.run(`UPDATE webhook_deliveries SET next_attempt_at = ${later} WHERE seq = ${oldest}`);
    await f.run(`UPDATE webhook_deliveries SET next_attempt_at = ${instant} WHERE seq = ${oldest}`);
    const ids: number[] = [];
    const claim = claimer(f.stores.webhooks);
    for (let turn = 0; turn < 3; turn++) {
      const [claimed] = await claim({
        count: 1,
        leaseMs: HOUR,
        perEndpoint: 1,
        busy: new Map(),
        circuit: NO_CIRCUIT,
      });
      ids.push(claimed ? plantOf(claimed) : 0);
    }
    expect(ids).toEqual([1, 2, 3]);
  });

  test("two fan-outs at once on one store make each change's delivery to each endpoint exactly once", async () => {
    const f = await fanOutStores();
    const all = await f.register(f.alice, [...CHANGE_TYPES]);
    const plain = await f.register(f.alice);
    const deletes = await f.register(f.alice, ["plant.deleted"]);
    const bobs = await f.register(f.bob, [...CHANGE_TYPES]);
    await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => f.stores.plants.createPlant(f.alice, { id: i + 1, name: `a${i}` })),
      ...Array.from({ length: 20 }, (_, i) => f.stores.plants.createPlant(f.bob, { id: i + 1, name: `b${i}` })),
    ]);
    for (let id = 1; id <= 10; id++) await f.stores.plants.updatePlant(f.alice, BigInt(id), { name: "renamed" });
    for (let id = 31; id <= 40; id++) await f.stores.plants.deletePlant(f.alice, BigInt(id));
    const alices = await f.changes(f.alice);
    const bobsChanges = await f.changes(f.bob);
    expect([alices.length, bobsChanges.length]).toEqual([60, 20]);

    // Pairs of fan-outs, each taking a few changes from the same cursors, until both find nothing.
    const lost = { count: 0 };
    const fanOut = createFanOut(countingLosses(f.stores.webhooks, lost), f.stores.changes);
    let taken = 0;
    for (;;) {
      const pair = await Promise.all([fanOut.due(NO_CIRCUIT.failures, 7), fanOut.due(NO_CIRCUIT.failures, 7)]);
      taken += pair[0] + pair[1];
      if (pair[0] + pair[1] === 0) break;
    }
    // They raced: one of a pair often found its cursor moved by the other. What they took
    // between them is each endpoint's owner's changes once.
    expect(lost.count).toBeGreaterThan(0);
    expect(taken).toBe(3 * alices.length + bobsChanges.length);
    const claimed = await claimAll(f.stores);
    expect(claimed.get(all)?.map((d) => d.payload)).toEqual(alices.map(changeJson));
    expect(claimed.get(plain)?.map(plantOf)).toEqual(
      alices.filter((change) => change.type === "plant.created").map((change) => Number(change.id)),
    );
    expect(claimed.get(deletes)?.map((d) => d.payload)).toEqual(
      alices.filter((change) => change.type === "plant.deleted").map(changeJson),
    );
    expect(claimed.get(bobs)?.map((d) => d.payload)).toEqual(bobsChanges.map(changeJson));
    expect(await f.count("SELECT count(*) AS n FROM webhook_deliveries")).toBe(60 + 40 + 10 + 20);
  });
});

describe(`the change log keeps what an endpoint has not had (${ENGINE})`, () => {
  test("prune leaves a change an enabled endpoint of its owner has not had yet; once fanned out it may go", async () => {
    const f = await fanOutStores();
    await f.register(f.alice, ["plant.deleted"]);
    // Carol's endpoint is disabled: it holds nothing back. Bob has none.
    const carols = await f.register(f.carol);
    await f.run(`UPDATE webhooks SET disabled_at = ${f.now} WHERE id = ${carols}`);
    await f.stores.plants.createPlant(f.alice, { id: 1, name: "a1" });
    await f.stores.plants.createPlant(f.bob, { id: 1, name: "b1" });
    await f.stores.plants.updatePlant(f.alice, 1n, { name: "a2" });
    await f.stores.plants.createPlant(f.bob, { id: 2, name: "b2" });
    await f.stores.plants.createPlant(f.carol, { id: 1, name: "c1" });
    await f.stores.plants.createPlant(f.alice, { id: 3, name: "a3" });
    await f.stores.plants.createPlant(f.bob, { id: 3, name: "b3" });
    const future = Date.now() + HOUR;
    const names = async () => (await f.stores.changes.readAll(0, 100)).map((change) => change.plant.name);
    // Every change in the log (on PostgreSQL, none left waiting in the inbox to be stamped).
    await f.stores.changes.settle();

    // Old enough, all of them: bob's and carol's go (never the newest), alice's stay.
    expect(await f.stores.changes.prune(future, 100)).toBe(3);
    expect(await names()).toEqual(["a1", "a2", "a3", "b3"]);
    // Her endpoint has had two of them (none was a delete: no delivery, the cursor moved all the same).
    expect(await f.fanOut.due(NO_CIRCUIT.failures, 2)).toBe(2);
    expect(await f.stores.changes.prune(future, 100)).toBe(2);
    expect(await names()).toEqual(["a3", "b3"]);
    expect(await f.stores.changes.prune(future, 100)).toBe(0);
    // And the last once it has had it.
    expect(await drain(f.fanOut)).toBe(1);
    expect(await f.stores.changes.prune(future, 100)).toBe(1);
    expect(await names()).toEqual(["b3"]);
    expect(await f.count("SELECT count(*) AS n FROM webhook_deliveries")).toBe(0);
  });
});

describe(`a field of Plant reaches every webhook body with no other edit (${ENGINE})`, () => {
  const required: readonly string[] = plantModels.NewPlant.required ?? [];
  const optional = VALUE_FIELDS.filter((field) => !required.includes(field));
  const change = (type: ChangeType, plant: Plant): Change => ({
    seq: 42,
    ownerId: 1,
    type,
    at: Date.UTC(2030, 0, 2, 3, 4, 5, 6),
    id: MAX,
    plant,
  });
  const valued = (suffix: string) =>
    Object.fromEntries(VALUE_FIELDS.map((field) => [field, `${field} ${suffix}`])) as unknown as Plant;
  /** Every subset of the optional fields left out of a plant with every field. */
  const plantsWithout = () =>
    Array.from({ length: 2 ** optional.length }, (_, mask) => {
      const plant = valued("x") as unknown as Record<string, string>;
      for (const [i, field] of optional.entries()) if (mask & (2 ** i)) delete plant[field];
      return plant as unknown as Plant;
    });

  test("bodyFor: the NewPlant has exactly the model's fields that hold a value, in its order; the change's data the same", () => {
    expect(PLANT_FIELDS).toEqual(["id", ...VALUE_FIELDS]);
    expect(optional.length).toBeGreaterThan(0);
    for (const plant of plantsWithout()) {
      const present = PLANT_FIELDS.filter((field) => field === "id" || plant[field] !== undefined);
      const created = bodyFor(undefined, change("plant.created", plant)) as string;
      expect(Object.keys(JSON.parse(created))).toEqual(present);
      expect(created).toStartWith('{"id":9223372036854775807');
      expect(JSON.parse(created.replace(String(MAX), "1"))).toEqual({ id: 1, ...plant });
      for (const type of CHANGE_TYPES) {
        const body = bodyFor([type], change(type, plant)) as string;
        expect(body).toBe(changeJson(change(type, plant)));
        const parsed = JSON.parse(body.replace(String(MAX), "1")) as { data: Record<string, unknown> };
        expect(Object.keys(parsed)).toEqual(CHANGE_KEYS);
        expect(Object.keys(parsed.data)).toEqual(present);
        // The change's data is the NewPlant an endpoint without events gets.
        expect(body).toContain(`"data":${created}}`);
      }
    }
  });

  test("bodyFor: without events only plant.created; with them, exactly the listed types", () => {
    const plant = valued("y");
    expect(CHANGE_TYPES.map((type) => bodyFor(undefined, change(type, plant)) !== undefined)).toEqual([
      true,
      false,
      false,
    ]);
    for (let mask = 1; mask < 2 ** CHANGE_TYPES.length; mask++) {
      const events = CHANGE_TYPES.filter((_, i) => mask & (2 ** i));
      for (const type of CHANGE_TYPES)
        expect({ events, type, sent: bodyFor(events, change(type, plant)) !== undefined }).toEqual({
          events,
          type,
          sent: events.includes(type),
        });
    }
  });

  test("through the stores: every body carries every value field of the plant, after a create, an update and a delete", async () => {
    const f = await fanOutStores();
    const all = await f.register(f.alice, [...CHANGE_TYPES]);
    const plain = await f.register(f.alice);
    const [first, second] = [valued("first"), valued("second")];
    await f.stores.plants.createPlant(f.alice, { id: 7, ...first });
    await f.stores.plants.updatePlant(f.alice, 7n, second);
    await f.stores.plants.deletePlant(f.alice, 7n, second);
    await drain(f.fanOut);
    const claimed = await claimAll(f.stores);
    const created = JSON.parse(claimed.get(plain)?.[0]?.payload ?? "{}") as Record<string, unknown>;
    expect(Object.keys(created)).toEqual(PLANT_FIELDS);
    expect(created).toEqual({ id: 7, ...first });
    const bodies = (claimed.get(all) ?? []).map((d) => JSON.parse(d.payload) as { data: Record<string, unknown> });
    expect(bodies.map((body) => body.data)).toEqual([
      { id: 7, ...first },
      { id: 7, ...second },
      { id: 7, ...second },
    ]);
    for (const body of bodies) expect(Object.keys(body.data)).toEqual(PLANT_FIELDS);
  });
});

describe.if(onPostgres)("the fan-out with several instances (postgres)", () => {
  test("two instances fanning out at once make each change's delivery to each endpoint exactly once", async () => {
    const f = await fanOutStores();
    const all = await f.register(f.alice, [...CHANGE_TYPES]);
    const plain = await f.register(f.alice);
    const updates = await f.register(f.alice, ["plant.updated"]);
    for (let start = 0; start < 300; start += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          f.stores.plants.createPlant(f.alice, { id: start + i + 1, name: `p${start + i}` }),
        ),
      );
    }
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => f.stores.plants.updatePlant(f.alice, BigInt(i + 1), { tag: "t" })),
    );
    const other = createPostgresStores(connect(postgresTarget(f.postgresUrl as string)).client, { log: () => {} });
    openedStores.add(other);
    const lost = { count: 0 };
    const fanOuts = [
      createFanOut(countingLosses(f.stores.webhooks, lost), f.stores.changes),
      createFanOut(countingLosses(other.webhooks, lost), other.changes),
    ];
    const changes = await f.changes(f.alice);
    expect(changes).toHaveLength(400);

    // Rounds of both instances fanning out at once, a few changes per call, until neither finds any.
    let taken = 0;
    for (;;) {
      const round = await Promise.all(
        [...Array(3)].flatMap(() => fanOuts.map((fanOut) => fanOut.due(NO_CIRCUIT.failures, 45))),
      );
      const sum = round.reduce((a, b) => a + b, 0);
      taken += sum;
      if (sum === 0) break;
    }
    expect(lost.count).toBeGreaterThan(0);
    expect(taken).toBe(3 * changes.length);
    const claimed = await claimAll(f.stores);
    expect(claimed.get(all)?.map((d) => d.payload)).toEqual(changes.map(changeJson));
    expect(claimed.get(plain)?.map(plantOf)).toEqual(
      changes.filter((change) => change.type === "plant.created").map((change) => Number(change.id)),
    );
    expect(claimed.get(updates)?.map((d) => d.payload)).toEqual(
      changes.filter((change) => change.type === "plant.updated").map(changeJson),
    );
    expect(await f.count("SELECT count(*)::int AS n FROM webhook_deliveries")).toBe(400 + 300 + 100);
    expect(await f.count("SELECT count(DISTINCT id)::int AS n FROM webhook_deliveries")).toBe(800);
  });
});
