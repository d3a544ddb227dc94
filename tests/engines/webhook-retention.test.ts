import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { SQL } from "bun";
import { createPruner, PRUNE_BATCH, PRUNE_EVERY_MS, PRUNE_PAUSE_MS } from "../../src/core/pruner";
import type { ClaimedDelivery, DeliveryStatus, WebhookStore } from "../../src/core/stores";
import { connect } from "../../src/db/postgres/client";
import { createPostgresStores } from "../../src/db/postgres/stores";
import { WEBHOOK_SQL as POSTGRES_SQL } from "../../src/db/postgres/webhook-queries";
import { WEBHOOK_SQL as SQLITE_SQL } from "../../src/db/sqlite/webhook-queries";
import { createFanOut } from "../../src/webhooks/fan-out";
import { manualTimers } from "../support/clock";
import { ENGINE, makeTestApp, onPostgres, onSqlite, openedStores, postgresTarget } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const DAY_MS = 86_400_000;

const sessions: SQL[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
});

/**
 * A test app where alice has one endpoint (nothing listens there, and no dispatcher runs: the
 * test makes the attempts itself) and a way to read its database as it is.
 */
async function outbox() {
  const t = await makeTestApp({ webhookAllowPrivate: true });
  const alice = await t.user("alice");
  const response = await t.call("POST", "/webhooks", { token: alice.token, json: { url: "http://127.0.0.1:9/hook" } });
  expect(response.status).toBe(201);
  const { id: endpoint } = (await response.json()) as { id: number };
  const session = t.postgresUrl === undefined ? undefined : new SQL(t.postgresUrl, { max: 1 });
  if (session) sessions.push(session);
  const store = t.stores.webhooks;
  return {
    t,
    store,
    endpoint,
    session,
    /** Rows of a statement written for both engines. */
    rows: async <Row>(sql: string): Promise<Row[]> =>
      session ? [...((await session.unsafe(sql)) as Row[])] : (t.sqlite.query(sql).all() as Row[]),
    async create(ids: number[]) {
      for (const id of ids) await t.createPlant(String(id), `plant ${id}`, alice.token);
      await createFanOut(store, t.stores.changes).owner(alice.id);
    },
    /** The endpoint's log, oldest first. */
    async log() {
      const page = await store.deliveries(alice.id, endpoint, undefined, 100_000);
      if (typeof page === "string") throw new Error(page);
      return page.deliveries;
    },
    /** Claims every due delivery: by the id of its plant. */
    async claimAll(): Promise<Map<number, ClaimedDelivery>> {
      const claimed = await store.claimDue({
        count: 100_000,
        leaseMs: 3_600_000,
        perEndpoint: 100_000,
        busy: new Map(),
        circuit: { failures: 1_000_000, restMs: 0 },
      });
      return new Map(claimed.map((delivery) => [(JSON.parse(delivery.payload) as { id: number }).id, delivery]));
    },
    /** Records `attempts` attempts, the last one making the delivery `outcome` (pending: retried in an hour). */
    async finish(delivery: ClaimedDelivery | undefined, outcome: DeliveryStatus, attempts = 1) {
      if (!delivery) throw new Error("no such delivery");
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const last = attempt === attempts;
        await store.recordAttempt({
          deliverySeq: delivery.seq,
          attempt,
          at: Date.now(),
          statusCode: last && outcome === "delivered" ? 200 : 500,
          durationMs: 1,
          error: undefined,
          outcome: last ? outcome : "pending",
          retryInMs: !last ? 0 : outcome === "pending" ? 3_600_000 : undefined,
        });
      }
    },
  };
}

/** The store with every batch's count of removed deliveries pushed onto `removed`. */
function counting(store: WebhookStore, removed: number[]): WebhookStore {
  return {
    ...store,
    pruneFinished: async (before, count) => {
      const n = await store.pruneFinished(before, count);
      removed.push(n);
      return n;
    },
  };
}

/** A claimed delivery's field, by the id of its plant. */
function fieldOf<K extends "id" | "seq">(claimed: Map<number, ClaimedDelivery>, key: K) {
  return (plant: number): ClaimedDelivery[K] => {
    const delivery = claimed.get(plant);
    if (!delivery) throw new Error(`no delivery for plant ${plant}`);
    return delivery[key];
  };
}

describe(`webhook retention (${ENGINE})`, () => {
  test("delivered and failed deliveries go with their attempts once WEBHOOK_RETENTION_DAYS old; pending and recent ones stay", async () => {
    const o = await outbox();
    await o.create([1, 2, 3, 4, 5, 6]);
    const oldNewest = Math.max(...(await o.log()).map((d) => d.createdAt.getTime()));
    await until(() => Date.now() > oldNewest + 2, { intervalMs: 1 });
    await o.create([7, 8, 9]);
    const recentOldest = Math.min(...(await o.log()).slice(6).map((d) => d.createdAt.getTime()));
    expect(recentOldest).toBeGreaterThan(oldNewest);

    const claimed = await o.claimAll();
    await o.finish(claimed.get(1), "delivered");
    await o.finish(claimed.get(2), "delivered", 3);
    await o.finish(claimed.get(3), "failed", 8);
    await o.finish(claimed.get(4), "failed");
    await o.finish(claimed.get(5), "pending", 2);
    // 6 and 9 stay claimed, pending with no attempt yet.
    await o.finish(claimed.get(7), "delivered");
    await o.finish(claimed.get(8), "failed", 2);
    const attemptsBefore = await o.rows<{ n: number }>("SELECT CAST(count(*) AS integer) AS n FROM webhook_attempts");
    expect(Number(attemptsBefore[0]?.n)).toBe(18);

    // The recent ones are 30 days old to the millisecond: kept; the others are older.
    const timers = manualTimers();
    const removed: number[] = [];
    const store = counting(o.store, removed);
    const retention = createPruner({
      what: "old webhook deliveries",
      prune: (before, limit) => store.pruneFinished(before, limit),
      keepMs: 30 * DAY_MS,
      log: (message) => {
        throw new Error(message);
      },
      clock: () => recentOldest + 30 * DAY_MS,
      timers,
    });
    retention.start();
    await timers.advance(0);
    await until(() => removed.length, { what: "the first batch" });
    await retention.stop();
    expect(removed).toEqual([4]);

    const kept = await o.log();
    expect(kept.map((d) => d.id)).toEqual([5, 6, 7, 8, 9].map(fieldOf(claimed, "id")));
    expect(kept.map((d) => d.status)).toEqual(["pending", "pending", "delivered", "failed", "pending"]);
    const attempts = await o.rows<{ seq: number; n: number }>(
      "SELECT delivery_seq AS seq, CAST(count(*) AS integer) AS n FROM webhook_attempts GROUP BY delivery_seq ORDER BY delivery_seq",
    );
    const seqOf = fieldOf(claimed, "seq");
    expect(attempts.map((row) => [Number(row.seq), Number(row.n)])).toEqual([
      [seqOf(5), 2],
      [seqOf(7), 1],
      [seqOf(8), 2],
    ]);
  });

  test(`a batch removes at most ${PRUNE_BATCH} deliveries, oldest first; a full one is followed by the next after a pause`, async () => {
    const o = await outbox();
    const plants = [...Array(PRUNE_BATCH + 25)].map((_, i) => i + 1);
    await o.create(plants);
    const claimed = await o.claimAll();
    for (const plant of plants) await o.finish(claimed.get(plant), plant % 2 === 0 ? "delivered" : "failed");
    const created = new Map((await o.log()).map((d) => [d.id, d.createdAt.getTime()]));

    const timers = manualTimers();
    const removed: number[] = [];
    const store = counting(o.store, removed);
    const retention = createPruner({
      what: "old webhook deliveries",
      prune: (before, limit) => store.pruneFinished(before, limit),
      keepMs: DAY_MS,
      log: (message) => {
        throw new Error(message);
      },
      clock: () => Date.now() + DAY_MS,
      timers,
    });
    retention.start();
    await timers.advance(0);
    await until(() => removed.length, { what: "the first batch" });
    expect(removed).toEqual([PRUNE_BATCH]);
    const left = await o.log();
    expect(left).toHaveLength(25);
    // The oldest went first: none left is older than one removed.
    const removedNewest = Math.max(
      ...[...created].filter(([id]) => !left.some((d) => d.id === id)).map(([, at]) => at),
    );
    expect(Math.min(...left.map((d) => d.createdAt.getTime()))).toBeGreaterThanOrEqual(removedNewest);

    await timers.advance(PRUNE_PAUSE_MS - 1);
    expect(removed).toHaveLength(1);
    await timers.advance(1);
    await until(() => removed.length === 2, { what: "the second batch" });
    expect(removed).toEqual([PRUNE_BATCH, 25]);
    expect(await o.log()).toEqual([]);
    // A short batch: the next look is a round later.
    await timers.advance(PRUNE_EVERY_MS - 1);
    expect(removed).toHaveLength(2);
    await timers.advance(1);
    await until(() => removed.length === 3, { what: "the next round" });
    await retention.stop();
    expect(removed).toEqual([PRUNE_BATCH, 25, 0]);
  });

  test("each batch is one DELETE along the index of finished deliveries: no scan of the outbox, no sort", async () => {
    const o = await outbox();
    if (onSqlite) {
      const plan = o.t.sqlite
        .query(`EXPLAIN QUERY PLAN ${SQLITE_SQL.pruneFinished}`)
        .all(0, 1)
        .map((step) => (step as { detail: string }).detail);
      expect(plan).toContain("SEARCH webhook_deliveries USING INDEX webhook_deliveries_finished_idx (created_at<?)");
      expect(plan.filter((step) => /SCAN|TEMP B-TREE/.test(step))).toEqual([]);
      return;
    }
    const session = o.session as SQL;
    // An outbox of 50,000 finished deliveries and 50,000 pending, as statistics see it.
    await session.unsafe(`INSERT INTO webhook_deliveries (id, webhook_id, payload, status, created_at, next_attempt_at)
      SELECT 'msg_' || g, ${o.endpoint}, '{}', CASE WHEN g % 2 = 0 THEN 'delivered' ELSE 'pending' END,
        now() - g * interval '1 minute', CASE WHEN g % 2 = 0 THEN NULL ELSE now() END
      FROM generate_series(1, 100000) g`);
    await session.unsafe("VACUUM ANALYZE webhook_deliveries");
    const reserved = await session.reserve();
    try {
      for (const mode of ["force_custom_plan", "force_generic_plan"]) {
        await reserved.unsafe(`SET plan_cache_mode = ${mode}`);
        await reserved.unsafe(`PREPARE prune_probe AS ${POSTGRES_SQL.pruneFinished}`);
        const [row] = (await reserved.unsafe(
          "EXPLAIN (FORMAT JSON) EXECUTE prune_probe(now() - interval '30 days', 100)",
        )) as [{ "QUERY PLAN": unknown }];
        await reserved.unsafe("DEALLOCATE prune_probe");
        const json = row["QUERY PLAN"];
        const plan = JSON.stringify(typeof json === "string" ? JSON.parse(json) : json);
        expect({ mode, finishedIndex: plan.includes('"Index Name":"webhook_deliveries_finished_idx"') }).toEqual({
          mode,
          finishedIndex: true,
        });
        expect({ mode, scans: plan.match(/"Seq Scan"|"Sort"/g) ?? [] }).toEqual({ mode, scans: [] });
      }
    } finally {
      reserved.release();
    }
  });
});

describe.if(onPostgres)("webhook retention with several instances (postgres)", () => {
  test("instances pruning at once remove every old delivery once, without an error", async () => {
    const o = await outbox();
    const plants = [...Array(60)].map((_, i) => i + 1);
    await o.create(plants);
    const claimed = await o.claimAll();
    for (const plant of plants) await o.finish(claimed.get(plant), "delivered");
    const target = postgresTarget(o.t.postgresUrl as string);
    const other = createPostgresStores(connect(target).client, { log: () => {} });
    openedStores.add(other);
    const before = Date.now() + 1_000;
    const batches = await Promise.all(
      [...Array(10)].flatMap(() => [o.store.pruneFinished(before, 5), other.webhooks.pruneFinished(before, 5)]),
    );
    const afterwards = await Promise.all([
      o.store.pruneFinished(before, 100),
      other.webhooks.pruneFinished(before, 100),
    ]);
    expect(batches.every((n) => n <= 5)).toBe(true);
    expect([...batches, ...afterwards].reduce((sum, n) => sum + n, 0)).toBe(60);
    expect(await o.log()).toEqual([]);
  });
});

describe.if(onSqlite)("the pending gauge (sqlite)", () => {
  // PostgreSQL counts in the server: its read holds no thread here.
  test("is read in steps: a request sent while it is read is answered before the read ends, and the count is exact", async () => {
    const o = await outbox();
    // 12,000 pending deliveries all due at the same millisecond (the steps part ties by seq,
    // each seeking: a row value of three seeks on two, which read the whole group at every step),
    // then 7,000 more over three later due times.
    o.t.sqlite.run(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 19000)
      INSERT INTO webhook_deliveries (id, webhook_id, payload, created_at, next_attempt_at)
      SELECT 'msg_' || i, ${o.endpoint}, '{}', 1, CASE WHEN i <= 12000 THEN 1 ELSE 2 + i % 3 END FROM n`);
    const alice = await o.t.user("alice");
    const order: string[] = [];
    const gauge = o.store.pendingCount().then((n) => {
      order.push("gauge");
      return n;
    });
    const answered = o.t.call("GET", "/plants", { token: alice.token }).then((response) => {
      order.push(`request ${response.status}`);
    });
    expect(await gauge).toBe(19_000);
    await answered;
    expect(order).toEqual(["request 200", "gauge"]);
  });
});
