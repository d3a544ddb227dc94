/**
 * Keyed creates (Idempotency-Key) keep the batching of creates: on SQLite they share the group
 * commit's transactions, on PostgreSQL the group's statements. What a client sees is in
 * tests/api/plants-idempotency.test.ts.
 */

import type { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import type { KeyedCreate, KeyedOutcome } from "../../src/core/idempotency";
import type { PlantStore } from "../../src/core/stores";
import { createPostgresPlantStore } from "../../src/db/postgres/plants";
import { openDatabase } from "../../src/db/sqlite/client";
import { createSqlitePlantStore } from "../../src/db/sqlite/plants";
import { createWriter } from "../../src/db/sqlite/writer";
import { onPostgres, onSqlite, recordedPostgres } from "../support/helpers";

const AT = 1_800_000_000_000;

const keyed = (key: string, id: number): KeyedCreate => ({
  key,
  requestHash: `hash of ${key}`,
  at: AT,
  expiredAt: AT - 3_600_000,
  created: { status: 200, body: `{"name":"plant ${id}"}`, etag: `"${id}"` },
  taken: { status: 409, body: "taken" },
});

/** 50 keyed and 50 plain creates at once, then the 50 keyed again: every answer right. */
async function burst(plants: PlantStore, owner: number) {
  const once = (i: number) => plants.createPlantOnce(owner, { id: i, name: `plant ${i}` }, keyed(`k${i}`, i));
  const first = await Promise.all(
    Array.from({ length: 50 }, (_, i) => [once(i), plants.createPlant(owner, { id: 1000 + i, name: "plain" })]).flat(),
  );
  for (let i = 0; i < 50; i++) {
    expect(first[2 * i]).toEqual({
      kind: "fresh",
      answer: { status: 200, body: `{"name":"plant ${i}"}`, etag: `"${i}"` },
    });
    expect(first[2 * i + 1]).toEqual({ name: "plain" });
  }
  const again = (await Promise.all(Array.from({ length: 50 }, (_, i) => once(i)))) as KeyedOutcome[];
  for (const [i, outcome] of again.entries())
    expect(outcome).toEqual({
      kind: "kept",
      answer: { status: 200, body: `{"name":"plant ${i}"}`, etag: `"${i}"` },
      requestHash: `hash of k${i}`,
    });
}

describe.if(onSqlite)("keyed creates on SQLite's group commit", () => {
  test("keyed and plain creates sent together commit in shared transactions", async () => {
    const { sqlite } = openDatabase({ path: ":memory:", synchronous: "FULL" });
    let commits = 0;
    const counted = new Proxy(sqlite, {
      get(target, key) {
        if (key === "run")
          return (sql: string, ...rest: []) => {
            if (sql === "COMMIT") commits++;
            return target.run(sql, ...rest);
          };
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Database;
    const writes = createWriter(counted, {});
    const owner = Number(
      sqlite.query<{ id: number }, []>("INSERT INTO users (name, created_at) VALUES ('a', 0) RETURNING id").get()?.id,
    );
    await burst(createSqlitePlantStore(sqlite, writes, { clock: Date.now, logged: () => {} }), owner);
    // 150 writes: a handful of commits, far fewer than one each.
    expect(commits).toBeGreaterThan(0);
    expect(commits).toBeLessThan(10);
    await writes.close();
    sqlite.close();
  });
});

describe.if(onPostgres)("keyed creates in PostgreSQL's create groups", () => {
  test("keyed and plain creates sent together share statements", async () => {
    const { client, sent, recording, owners } = await recordedPostgres();
    try {
      await burst(createPostgresPlantStore(recording), owners[0]);
      const inserts = sent.filter(({ sql }) => sql.includes("INSERT INTO plants"));
      // 150 creates: a few statements, far fewer than one each.
      expect(inserts.length).toBeLessThan(20);
      expect(inserts.some(({ sql }) => sql.includes("idempotency_keys"))).toBe(true);
    } finally {
      await client.close();
    }
  });

  test("two keyed creates of one id in one group: one plant, and each its own kept answer", async () => {
    const { client, recording, owners } = await recordedPostgres();
    try {
      const plants = createPostgresPlantStore(recording);
      // The first create takes the slot, so the two keyed ones queue behind it and leave together.
      const [, a, b] = await Promise.all([
        plants.createPlant(owners[0], { id: 4, name: "plant 4" }),
        plants.createPlantOnce(owners[0], { id: 5, name: "plant 5" }, keyed("first", 5)),
        plants.createPlantOnce(owners[0], { id: 5, name: "plant 5" }, keyed("second", 5)),
      ]);
      expect([a, b]).toEqual([
        { kind: "fresh", answer: { status: 200, body: '{"name":"plant 5"}', etag: '"5"' } },
        { kind: "fresh", answer: { status: 409, body: "taken" } },
      ]);
      const [{ n }] = (await client`SELECT count(*)::int AS n FROM idempotency_keys`) as [{ n: number }];
      expect(n).toBe(2);
    } finally {
      await client.close();
    }
  });
});
