import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { SQL } from "bun";
import type { Stores } from "../../src/core/stores";
import { ALL_SCOPES, hashToken } from "../../src/core/tokens";
import { applyMigrations, MIGRATIONS } from "../../src/db/migrations";
import { connect, migrate } from "../../src/db/postgres/client";
import { createPostgresStores } from "../../src/db/postgres/stores";
import { openDatabase } from "../../src/db/sqlite/client";
import { createSqliteStores } from "../../src/db/sqlite/stores";
import { createFanOut } from "../../src/webhooks/fan-out";
import { ENGINE, emptyPostgresDatabase, onPostgres, openedStores, postgresTarget } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

const sessions: SQL[] = [];
afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
});

/** Stores on a database migrated up to (not including) `tag`, with `seed` run there, then migrated whole. */
async function migratedAcross(tag: string, seed: string[]) {
  const before = MIGRATIONS[ENGINE].findIndex((migration) => migration.tag.endsWith(tag));
  expect(before).toBeGreaterThan(0);
  let stores: Stores;
  let rows: <Row>(sql: string) => Promise<Row[]>;
  if (onPostgres) {
    const { client } = connect(postgresTarget(await emptyPostgresDatabase()));
    sessions.push(client);
    await migrate(client, MIGRATIONS.postgres.slice(0, before));
    for (const statement of seed) await client.unsafe(statement);
    await migrate(client);
    stores = createPostgresStores(client, { log: () => {} });
    rows = async (sql) => [...(await client.unsafe(sql))];
  } else {
    const { sqlite, db } = openDatabase({ path: ":memory:", synchronous: "FULL", migrate: false });
    applyMigrations(db, MIGRATIONS.sqlite.slice(0, before));
    for (const statement of seed) sqlite.run(statement);
    applyMigrations(db, MIGRATIONS.sqlite);
    stores = createSqliteStores(sqlite, { log: () => {}, maxQueued: 100, lockTimeoutMs: 5_000 });
    rows = async (sql) => sqlite.query(sql).all() as never[];
  }
  openedStores.add(stores);
  return { stores, rows };
}

describe(`the migration to webhooks fed by the change log (${ENGINE})`, () => {
  test("an event still waiting becomes its delivery; the endpoint then gets only later changes, each once", async () => {
    const now = onPostgres ? "now()" : "0";
    const { stores, rows } = await migratedAcross("webhook-changes", [
      `INSERT INTO users (name, created_at) VALUES ('alice', ${now})`,
      `INSERT INTO webhooks (owner_id, url, secret, created_at) VALUES (1, 'http://127.0.0.1:9/a', 's', ${now})`,
      // The old outbox's trigger writes its event; the migration before it logged no change for it.
      "INSERT INTO plants (owner_id, id, name) VALUES (1, 7, 'Old')",
    ]);
    const payloads = async () =>
      (await rows<{ payload: string; type: string }>("SELECT payload, type FROM webhook_deliveries ORDER BY seq")).map(
        ({ payload, type }) => `${type} ${payload}`,
      );
    expect(await payloads()).toEqual(['plant.created {"id":7,"name":"Old"}']);
    await stores.plants.createPlant(1, { id: 8, name: "New" });
    const fanOut = createFanOut(stores.webhooks, stores.changes);
    await fanOut.due(5);
    await fanOut.due(5);
    expect(await payloads()).toEqual(['plant.created {"id":7,"name":"Old"}', 'plant.created {"id":8,"name":"New"}']);
  });
});

describe(`the migration to scoped, expiring tokens (${ENGINE})`, () => {
  test("a token from before it has all four scopes and no expiry, and still authenticates", async () => {
    const now = onPostgres ? "now()" : "0";
    const token = "pst_0000000000000000000000000000000000000000000";
    const { stores } = await migratedAcross("token-scopes", [
      `INSERT INTO users (name, created_at) VALUES ('alice', ${now})`,
      `INSERT INTO tokens (user_id, hash, created_at) VALUES (1, '${hashToken(token)}', ${now})`,
    ]);
    expect(await stores.tokens.authenticate(token)).toEqual({
      id: 1,
      tokenId: 1,
      scopes: ALL_SCOPES,
      expiresAt: null,
      expired: false,
    });
    expect(await stores.tokens.list()).toEqual([
      expect.objectContaining({ name: "cli", scopes: ALL_SCOPES, expiresAt: null }),
    ]);
  });
});
