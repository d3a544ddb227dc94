import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import type { WebhookStore } from "../../src/core/stores";
import { MIGRATIONS } from "../../src/db/migrations";
import { connect, migrate } from "../../src/db/postgres/client";
import { createPostgresStores } from "../../src/db/postgres/stores";
import { openDatabase } from "../../src/db/sqlite/client";
import { applyMigrations } from "../../src/db/sqlite/migrations";
import { createSqliteStores } from "../../src/db/sqlite/stores";
import { WEBHOOK_SQL } from "../../src/db/sqlite/webhook-queries";
import {
  ENGINE,
  emptyPostgresDatabase,
  makeTestApp,
  onPostgres,
  onSqlite,
  openedStores,
  postgresTarget,
} from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const sessions: SQL[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
});

/** A test app (no dispatcher runs) and a way to read its database as it is, on either engine. */
async function outbox() {
  const t = await makeTestApp({ webhookAllowPrivate: true });
  const session = t.postgresUrl === undefined ? undefined : new SQL(t.postgresUrl, { max: 1 });
  if (session) sessions.push(session);
  const count = async (sql: string): Promise<number> => {
    const rows = session
      ? ((await session.unsafe(sql)) as Array<{ n: number }>)
      : [t.sqlite.query(sql).get() as { n: number }];
    return Number(rows[0]?.n);
  };
  const run = async (sql: string) => {
    if (session) await session.unsafe(sql);
    else t.sqlite.run(sql);
  };
  const register = async (token: string, path: string) => {
    const response = await t.call("POST", "/webhooks", { token, json: { url: `http://127.0.0.1:9${path}` } });
    expect(response.status).toBe(201);
    return ((await response.json()) as { id: number }).id;
  };
  return { t, count, run, register };
}

/** Claims every due delivery (fanning out what waits first): endpoint id → the plant ids it gets. */
async function claimAll(store: WebhookStore, circuit = { failures: 1_000_000, restMs: 0 }) {
  const claimed = await store.claimDue({
    count: 100_000,
    leaseMs: 3_600_000,
    perEndpoint: 100_000,
    busy: new Map(),
    circuit,
  });
  const plants = new Map<number, number[]>();
  for (const delivery of claimed.sort((a, b) => a.seq - b.seq)) {
    const list = plants.get(delivery.webhookId) ?? [];
    list.push((JSON.parse(delivery.payload) as { id: number }).id);
    plants.set(delivery.webhookId, list);
  }
  return plants;
}

describe(`the outbox's events (${ENGINE})`, () => {
  test("a create writes one event whatever its owner's endpoints, none without; deliveries come from the fan-out", async () => {
    const o = await outbox();
    const alice = await o.t.user("alice");
    const bob = await o.t.tokenFor("bob");
    const endpoints: number[] = [];
    for (let i = 0; i < 10; i++) endpoints.push(await o.register(alice.token, `/a${i}`));
    await o.t.createPlant("1", "Fern", alice.token);
    await o.t.createPlant("1", "Fern", bob);
    // The create's transaction wrote one small row for alice's plant, none for bob's, no delivery.
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(1);
    expect(await o.count("SELECT count(*) AS n FROM webhook_deliveries")).toBe(0);
    // Reading the log fans the event out: one delivery per endpoint, the event gone.
    const page = await o.t.stores.webhooks.deliveries(alice.id, endpoints[0] as number, undefined, 10);
    expect(page).toMatchObject({ deliveries: [{ status: "pending", attempts: 0 }], more: false });
    expect(await o.count("SELECT count(*) AS n FROM webhook_deliveries")).toBe(10);
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(0);
    const claimed = await claimAll(o.t.stores.webhooks);
    expect([...claimed.keys()].sort((a, b) => a - b)).toEqual(endpoints);
    expect([...claimed.values()].every((plants) => plants.length === 1 && plants[0] === 1)).toBe(true);
  });

  test("an endpoint registered after a plant gets none of it, one deleted before the fan-out none; later plants go to both", async () => {
    const o = await outbox();
    const alice = await o.t.tokenFor("alice");
    const early = await o.register(alice, "/early");
    const gone = await o.register(alice, "/gone");
    await o.t.createPlant("1", "Fern", alice);
    await o.t.createPlant("2", "Ivy", alice);
    const late = await o.register(alice, "/late");
    const deleted = await o.t.call("DELETE", `/webhooks/${gone}`, { token: alice });
    expect(deleted.status).toBe(204);
    // Nothing was fanned out yet: the events wait, and the claim fans them out first.
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(2);
    expect(await claimAll(o.t.stores.webhooks)).toEqual(new Map([[early, [1, 2]]]));
    await o.t.createPlant("3", "Moss", alice);
    expect(await claimAll(o.t.stores.webhooks)).toEqual(
      new Map([
        [early, [3]],
        [late, [3]],
      ]),
    );
  });

  test("while every endpoint of an owner rests with deliveries pending its events wait, one row each; its log or a closed circuit fans them out", async () => {
    const o = await outbox();
    const circuit = { failures: 5, restMs: 30_000 };
    const alice = await o.t.user("alice");
    const endpoint = await o.register(alice.token, "/down");
    await o.t.createPlant("1", "Fern", alice.token);
    expect(await claimAll(o.t.stores.webhooks, circuit)).toEqual(new Map([[endpoint, [1]]]));
    // Its circuit opens (5 failures in a row, just now); the claimed delivery is still pending.
    const now = onPostgres ? "now()" : String(Date.now());
    await o.run(`UPDATE webhooks SET consecutive_failures = 5, last_failed_at = ${now}`);
    for (let id = 2; id <= 4; id++) await o.t.createPlant(String(id), `p${id}`, alice.token);
    expect(await claimAll(o.t.stores.webhooks, circuit)).toEqual(new Map());
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(3);
    expect(await o.count("SELECT count(*) AS n FROM webhook_deliveries")).toBe(1);
    // The pending gauge sees them: the delivery, and each waiting plant once.
    expect(await o.t.stores.webhooks.pendingCount()).toBe(4);
    // The owner reads the log: every plant's delivery is in it.
    const log = await o.t.stores.webhooks.deliveries(alice.id, endpoint, undefined, 10);
    expect(typeof log === "string" ? log : log.deliveries.length).toBe(4);
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(0);
    await o.t.createPlant("5", "Moss", alice.token);
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(1);
    // A 2xx closes the circuit: the next claim fans out what waited, and takes it with the rest.
    await o.run("UPDATE webhooks SET consecutive_failures = 0");
    expect(await claimAll(o.t.stores.webhooks, circuit)).toEqual(new Map([[endpoint, [2, 3, 4, 5]]]));
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(0);
    // An owner's last endpoint deleted takes its waiting events with it.
    await o.t.createPlant("6", "Ivy", alice.token);
    await o.run("UPDATE webhooks SET consecutive_failures = 5");
    expect(await claimAll(o.t.stores.webhooks, circuit)).toEqual(new Map());
    expect((await o.t.call("DELETE", `/webhooks/${endpoint}`, { token: alice.token })).status).toBe(204);
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(0);
  });

  test("a fan-out that cannot write does not cost the log read: 200 with what is there; the events wait for a later one", async () => {
    const o = await outbox();
    const alice = await o.t.user("alice");
    const endpoint = await o.register(alice.token, "/a");
    await o.t.createPlant("1", "Fern", alice.token);
    expect(await claimAll(o.t.stores.webhooks)).toEqual(new Map([[endpoint, [1]]]));
    await o.t.createPlant("2", "Ivy", alice.token);
    // Every fan-out now fails, as on a full disk: the statement that takes events errs.
    await o.run(
      onPostgres
        ? `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no room'; END $$;
           CREATE TRIGGER refuse BEFORE DELETE ON webhook_events FOR EACH ROW EXECUTE FUNCTION refuse()`
        : "CREATE TRIGGER refuse BEFORE DELETE ON webhook_events BEGIN SELECT RAISE(ABORT, 'no room'); END",
    );
    const log = await o.t.call("GET", `/webhooks/${endpoint}/deliveries`, { token: alice.token });
    expect(log.status).toBe(200);
    expect(((await log.json()) as unknown[]).length).toBe(1);
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(1);
    // Once the fan-out can write again, the next read shows the waiting plant's delivery.
    await o.run(`DROP TRIGGER refuse${onPostgres ? " ON webhook_events" : ""}`);
    const later = await o.t.call("GET", `/webhooks/${endpoint}/deliveries`, { token: alice.token });
    expect(((await later.json()) as unknown[]).length).toBe(2);
  });

  test("deliveries due at the same instant are claimed oldest first, wherever their rows sit", async () => {
    const o = await outbox();
    const alice = await o.t.user("alice");
    const endpoint = await o.register(alice.token, "/a");
    for (let id = 1; id <= 3; id++) await o.t.createPlant(String(id), `p${id}`, alice.token);
    const log = await o.t.stores.webhooks.deliveries(alice.id, endpoint, undefined, 10);
    expect(typeof log === "string" ? log : log.deliveries.length).toBe(3);
    // All due at one instant; then the oldest row is written twice, which moves it to the table's end.
    const [instant, later] = onPostgres ? ["'2000-01-01 00:00:00+00'", "'2000-01-01 00:00:01+00'"] : ["0", "1"];
    await o.run(`UPDATE webhook_deliveries SET next_attempt_at = ${instant}`);
    const oldest = "(SELECT min(seq) FROM webhook_deliveries)";
    await o.run(`UPDATE webhook_deliveries SET next_attempt_at = ${later} WHERE seq = ${oldest}`);
    await o.run(`UPDATE webhook_deliveries SET next_attempt_at = ${instant} WHERE seq = ${oldest}`);
    const ids: number[] = [];
    for (let turn = 0; turn < 3; turn++) {
      const [claimed] = await o.t.stores.webhooks.claimDue({
        count: 1,
        leaseMs: 3_600_000,
        perEndpoint: 1,
        busy: new Map(),
        circuit: { failures: 1_000_000, restMs: 0 },
      });
      ids.push((JSON.parse(claimed?.payload ?? "{}") as { id: number }).id);
    }
    expect(ids).toEqual([1, 2, 3]);
  });

  test("deliveries pending before the events' migration survive it and are claimed after", async () => {
    const before = MIGRATIONS[ENGINE].findIndex((migration) => migration.tag.endsWith("outbox-events"));
    expect(before).toBeGreaterThan(0);
    const now = onPostgres ? "now()" : "0";
    const seed = [
      `INSERT INTO users (name, created_at) VALUES ('alice', ${now})`,
      `INSERT INTO webhooks (owner_id, url, secret, created_at) VALUES (1, 'http://127.0.0.1:9/a', 's', ${now})`,
      "INSERT INTO plants (owner_id, id, name) VALUES (1, 7, 'Old')",
    ];
    let store: WebhookStore;
    let count: (sql: string) => Promise<number>;
    if (onPostgres) {
      const target = postgresTarget(await emptyPostgresDatabase());
      const { client } = connect(target);
      sessions.push(client);
      await migrate(client, MIGRATIONS.postgres.slice(0, before));
      for (const statement of seed) await client.unsafe(statement);
      await migrate(client);
      const stores = createPostgresStores(client, { log: () => {} });
      openedStores.add(stores);
      store = stores.webhooks;
      count = async (sql) => Number(((await client.unsafe(sql)) as Array<{ n: number }>)[0]?.n);
    } else {
      const { sqlite, db } = openDatabase({ path: ":memory:", synchronous: "FULL", migrate: false });
      applyMigrations(db, MIGRATIONS.sqlite.slice(0, before));
      for (const statement of seed) sqlite.run(statement);
      applyMigrations(db, MIGRATIONS.sqlite);
      const stores = createSqliteStores(sqlite, { log: () => {}, maxQueued: 100, lockTimeoutMs: 5_000 });
      openedStores.add(stores);
      store = stores.webhooks;
      count = async (sql) => Number((sqlite.query(sql).get() as { n: number }).n);
    }
    expect(await count("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'")).toBe(1);
    expect(await claimAll(store)).toEqual(new Map([[1, [7]]]));
  });
});

describe.if(onPostgres)("the fan-out with several instances (postgres)", () => {
  test("instances fanning out at once make each plant's delivery to each endpoint exactly once", async () => {
    const o = await outbox();
    const alice = await o.t.tokenFor("alice");
    for (let i = 0; i < 3; i++) await o.register(alice, `/a${i}`);
    const created = await Promise.all(
      [...Array(450)].map((_, i) => o.t.call("POST", "/plants", { token: alice, json: { id: i + 1, name: "p" } })),
    );
    expect(created.every((response) => response.status === 200)).toBe(true);
    const other = createPostgresStores(connect(postgresTarget(o.t.postgresUrl as string)).client, { log: () => {} });
    openedStores.add(other);
    const claims = await Promise.all(
      [...Array(6)].flatMap(() => [claimAll(o.t.stores.webhooks), claimAll(other.webhooks)]),
    );
    // A claim may have looked before another instance's fan-out committed: one more takes the rest.
    claims.push(await claimAll(o.t.stores.webhooks));
    const byEndpoint = new Map<number, number[]>();
    for (const claim of claims) {
      for (const [endpoint, plants] of claim)
        byEndpoint.set(endpoint, [...(byEndpoint.get(endpoint) ?? []), ...plants]);
    }
    const all = [...Array(450)].map((_, i) => i + 1);
    expect([...byEndpoint.values()].map((plants) => plants.sort((a, b) => a - b))).toEqual([all, all, all]);
    expect(await o.count("SELECT count(*) AS n FROM webhook_deliveries")).toBe(1_350);
    expect(await o.count("SELECT count(*) AS n FROM webhook_events")).toBe(0);
  });
});

describe.if(onSqlite)("the fan-out's plan (sqlite)", () => {
  test("owners are the outer loop: a held owner's events are never read, an owner's are found by its index", async () => {
    const o = await outbox();
    for (const [sql, params] of [
      [WEBHOOK_SQL.fanOut, [100, 5]],
      [WEBHOOK_SQL.anyEvent, [5]],
    ] as const) {
      const plan = (o.t.sqlite.query(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>)
        .map((row) => row.detail)
        .join("\n");
      expect(plan).toContain("SEARCH e USING COVERING INDEX webhook_events_owner_seq_idx (owner_id=?)");
      expect(plan).not.toMatch(/SCAN (e|webhook_events)\b/);
    }
  });
});
