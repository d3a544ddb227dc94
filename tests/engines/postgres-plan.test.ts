import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { ReservedSQL, SQL } from "bun";
import { getTableConfig } from "drizzle-orm/pg-core";
import type { NewPlant } from "../../src/core/plant";
import { LIST_CHUNK_SIZE, type PlantFilter } from "../../src/core/stores";
import { connect } from "../../src/db/postgres/client";
import { createPostgresPlantStore } from "../../src/db/postgres/plants";
import * as schema from "../../src/db/postgres/schema";
import { createPostgresTokenStore } from "../../src/db/postgres/tokens";
import { freshPostgresDatabase, onPostgres, postgresTarget, recordingClient } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/*
 * PostgreSQL's own plan test (SQLite's is query-plan.test.ts). The statements are the ones the
 * plant store sends, caught at the driver's `unsafe` (which Drizzle also calls), text and
 * parameters as sent: a change to the store's query shape is planned here too. The driver prepares each
 * statement on its connection, so PostgreSQL may plan it with its parameters (the first five
 * executions) or once for all of them (a generic plan, afterwards): both are checked, through
 * PREPARE and EXPLAIN EXECUTE, as PostgreSQL 15 has no EXPLAIN (GENERIC_PLAN).
 *
 * The store holds a few large owners among many small ones, as a shared service does: a generic
 * plan is sized for the average owner, and must still suit a large one.
 */

const OWNERS = 8;
const PLANTS_PER_OWNER = 6_000;
const SMALL_OWNERS = 3_000;
const PLANTS_PER_SMALL_OWNER = 5;
/** One plant in ten has no tag, the others one of nine: a tag matches a ninth of the rest. */
const TAG = "tag-3";
const PLAN_MODES = ["force_custom_plan", "force_generic_plan"] as const;

const config = getTableConfig(schema.plants);
const PRIMARY_KEY = config.primaryKeys[0]?.getName() as string;
const TAG_INDEX = config.indexes[0]?.config.name as string;

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  "Recheck Cond"?: string;
  "Sort Key"?: string[];
  Plans?: PlanNode[];
}
interface Plan {
  mode: string;
  sql: string;
  nodes: PlanNode[];
}
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];
const outline = (nodes: PlanNode[]) =>
  nodes.map((node) => [node["Node Type"], node["Index Name"]].filter(Boolean).join(" ")).join(" > ");

let client: SQL;
const sent: Array<{ sql: string; params: unknown[] }> = [];
let store: ReturnType<typeof createPostgresPlantStore>;
let ownerId: number;
/** Ids that leave half, and a sixth, of the owner's plants after them. */
let middleId: bigint;
let lateId: bigint;

/** The `nth` of the owner's ids, counting from 0. */
async function nthOwnId(nth: number): Promise<bigint> {
  const [row] = (await client`
    SELECT id::text AS id FROM plants WHERE owner_id = ${ownerId} ORDER BY id OFFSET ${nth} LIMIT 1`) as [
    { id: string },
  ];
  return BigInt(row.id);
}

beforeAll(async () => {
  if (!onPostgres) return;
  ({ client } = connect(postgresTarget(await freshPostgresDatabase()), 2));
  await client`INSERT INTO users (name, created_at) SELECT 'owner-' || g, now() FROM generate_series(1, ${OWNERS}) g`;
  // Ids spread over the bigint range and stored out of id order, as clients pick them.
  await client`
    INSERT INTO plants (owner_id, id, name, tag)
    SELECT u.id, (p * 7919 % ${PLANTS_PER_OWNER})::bigint * 1000000000000 - 3000000000000000,
           'Plant ' || p, CASE WHEN p % 10 = 0 THEN NULL ELSE 'tag-' || (p % 10) END
    FROM users u, generate_series(1, ${PLANTS_PER_OWNER}) p`;
  await client`
    INSERT INTO users (name, created_at) SELECT 'small-' || g, now() FROM generate_series(1, ${SMALL_OWNERS}) g`;
  await client`
    INSERT INTO plants (owner_id, id, name, tag)
    SELECT u.id, p, 'Plant ' || p, CASE WHEN p % 2 = 0 THEN NULL ELSE 'tag-' || (p % 10) END
    FROM users u, generate_series(1, ${PLANTS_PER_SMALL_OWNER}) p WHERE u.name LIKE 'small-%'`;
  // As autovacuum leaves a table: statistics gathered, pages marked all-visible.
  await client`VACUUM ANALYZE plants`;
  [{ id: ownerId }] = (await client`SELECT id FROM users WHERE name = 'owner-3'`) as [{ id: number }];
  middleId = await nthOwnId(PLANTS_PER_OWNER / 2);
  lateId = await nthOwnId((PLANTS_PER_OWNER * 5) / 6);
  store = createPostgresPlantStore(recordingClient(client, sent));
});

afterAll(async () => {
  await client?.close();
});

/** A parameter as a literal, for EXECUTE, which takes no bound parameters inside EXPLAIN. */
function literal(value: unknown): string {
  if (typeof value === "bigint" || (typeof value === "number" && Number.isSafeInteger(value))) return String(value);
  if (typeof value === "string") return `'${value.replaceAll("'", "''")}'`;
  throw new Error(`no literal for parameter ${String(value)}`);
}

async function explain(connection: ReservedSQL, sql: string, params: unknown[]): Promise<PlanNode[]> {
  await connection.unsafe(`PREPARE plan_probe AS ${sql}`);
  try {
    const [row] = (await connection.unsafe(
      `EXPLAIN (FORMAT JSON) EXECUTE plan_probe(${params.map(literal).join(", ")})`,
    )) as [{ "QUERY PLAN": unknown }];
    const json = row["QUERY PLAN"];
    const [{ Plan }] = (typeof json === "string" ? JSON.parse(json) : json) as [{ Plan: PlanNode }];
    return nodesOf(Plan);
  } finally {
    await connection.unsafe("DEALLOCATE plan_probe");
  }
}

/** Every statement `run` sends, planned with its parameters and generically. */
async function plansOf(run: () => unknown): Promise<Plan[]> {
  sent.length = 0;
  await run();
  expect(sent.length).toBeGreaterThan(0);
  const connection = await client.reserve();
  try {
    const plans: Plan[] = [];
    for (const mode of PLAN_MODES) {
      await connection.unsafe(`SET plan_cache_mode = ${mode}`);
      for (const { sql, params } of sent) plans.push({ mode, sql, nodes: await explain(connection, sql, params) });
    }
    await connection.unsafe("RESET plan_cache_mode");
    return plans;
  } finally {
    connection.release();
  }
}

/** Plants read through `index` alone, already in id order: no scan of the table, no sort. */
function expectIndexWalk(plans: Plan[], index: string) {
  for (const { mode, sql, nodes } of plans) {
    expect({ mode, sql, plan: outline(nodes) }).toEqual({
      mode,
      sql,
      plan: expect.stringMatching(new RegExp(`^Limit > Index (Only )?Scan ${index}$`)),
    });
  }
}

const indexFor = (filter: PlantFilter) => (filter.tag === undefined ? PRIMARY_KEY : TAG_INDEX);
const shapes: Array<[string, () => PlantFilter]> = [
  ["a first page", () => ({})],
  ["a later page, after an id", () => ({ after: middleId })],
  ["a tagged page", () => ({ tag: TAG })],
  ["a later tagged page", () => ({ tag: TAG, after: middleId })],
];

describe.if(onPostgres)("PostgreSQL walks an index in id order for every list statement", () => {
  test("the schema names the two indexes the plans use", () => {
    expect(PRIMARY_KEY).toBe("plants_owner_id_id_pk");
    expect(TAG_INDEX).toBe("plants_owner_tag_id_name_idx");
  });

  for (const [name, filter] of shapes) {
    test(`${name}: a page of 50`, async () => {
      const plans = await plansOf(async () => {
        expect((await store.listPage(ownerId, filter(), 50)).plants).toHaveLength(50);
      });
      expect(plans.map((plan) => plan.sql)).toEqual([expect.stringContaining("ORDER BY"), expect.anything()]);
      expectIndexWalk(plans, indexFor(filter()));
    });

    test(`${name}: the walk to a long list's last id reads ids only`, async () => {
      const plans = await plansOf(() => store.nthId(ownerId, filter(), PLANTS_PER_OWNER / 10));
      expect(plans.every((plan) => plan.sql.startsWith('SELECT "id" FROM'))).toBe(true);
      expectIndexWalk(plans, indexFor(filter()));
    });
  }

  for (const [name, filter] of [shapes[0], shapes[2]] as Array<[string, () => PlantFilter]>) {
    test(`${name} of ${LIST_CHUNK_SIZE}, a streamed list's first chunk`, async () => {
      const plans = await plansOf(() => store.listPage(ownerId, filter(), LIST_CHUNK_SIZE));
      expectIndexWalk(plans, indexFor(filter()));
    });
  }

  /*
   * Near a list's end, with a few chunks' worth of plants left after the cursor, PostgreSQL may
   * prefer fetching those few in page order and keeping the first chunk of them (a top-N sort)
   * over visiting a chunk of heap rows in id order. That stays bounded by the plants after the
   * cursor: never the owner's whole list, never the table.
   */
  test(`a chunk of ${LIST_CHUNK_SIZE} near the list's end: a walk, or a top-N sort of the plants after the cursor`, async () => {
    const plans = await plansOf(() => store.listPage(ownerId, { after: lateId }, LIST_CHUNK_SIZE));
    for (const { mode, sql, nodes } of plans) {
      const plan = outline(nodes);
      if (new RegExp(`^Limit > Index (Only )?Scan ${PRIMARY_KEY}$`).test(plan)) continue;
      expect({ mode, sql, plan }).toEqual({
        mode,
        sql,
        plan: expect.stringMatching(/^Limit > Sort > (Index|Bitmap)/),
      });
      expect(nodes.find((node) => node["Node Type"] === "Sort")?.["Sort Key"]).toEqual([
        expect.stringMatching(/^(plants\.)?id$/),
      ]);
      const conditions = nodes.flatMap((node) => [node["Index Cond"], node["Recheck Cond"]].filter(Boolean));
      expect(conditions.length).toBeGreaterThan(0);
      for (const condition of conditions) expect(condition).toMatch(/owner_id = .* AND \(?id > /);
    }
  });
});

/*
 * A statement costed past jit_above_cost is JIT-compiled on every run: 2-25 ms for a page read
 * in 0.03 ms. The service's connections run with JIT off (client.ts), and a page, planned with
 * its own values, must still cost a page whatever the owner holds.
 */
describe.if(onPostgres)("PostgreSQL costs a page of a large owner as a page", () => {
  test("every page statement, for an owner of 200,000 plants, is costed below jit_above_cost, on connections with JIT off", async () => {
    // The service's connections, but the seed and VACUUM are not held to its statement timeout.
    const target = { ...postgresTarget(await freshPostgresDatabase()), statementTimeoutMs: 0 };
    const { client: own } = connect(target, 2);
    try {
      const [{ id: big }] = (await own`
        INSERT INTO users (name, created_at) VALUES ('big', now()) RETURNING id`) as [{ id: number }];
      await own`
        INSERT INTO plants (owner_id, id, name, tag)
        SELECT ${big}, g, 'Plant ' || g, 'tag-' || (g % 3) FROM generate_series(1, 200000) g`;
      await own`VACUUM ANALYZE plants`;
      const [{ limit, jit }] = (await own`
        SELECT current_setting('jit_above_cost')::float8 AS limit, current_setting('jit') AS jit`) as [
        { limit: number; jit: string },
      ];
      // The service's connections run with JIT off (client.ts); the cost is checked all the same.
      expect(jit).toBe("off");
      const seen: Array<{ sql: string; params: unknown[] }> = [];
      const pages = createPostgresPlantStore(recordingClient(own, seen));
      for (const filter of [{}, { after: 1000n }, { tag: "tag-1" }, { tag: "tag-1", after: 1000n }])
        for (const count of [20, LIST_CHUNK_SIZE])
          expect((await pages.listPage(big, filter, count)).plants).toHaveLength(count);
      expect(seen.length).toBe(8);
      for (const { sql, params } of seen) {
        const [row] = (await own.unsafe(
          `EXPLAIN (FORMAT JSON) ${sql.replace(/\$(\d+)/g, (_, n) => literal(params[Number(n) - 1]))}`,
        )) as [{ "QUERY PLAN": unknown }];
        const json = row["QUERY PLAN"];
        const [explained] = (typeof json === "string" ? JSON.parse(json) : json) as [
          { Plan: { "Total Cost": number } },
        ];
        const cost = explained.Plan["Total Cost"];
        expect({ sql, cost, belowJit: cost < limit }).toEqual({ sql, cost, belowJit: true });
      }
    } finally {
      await own.close();
    }
  });
});

/*
 * A group's statement joins its rows (a JSON recordset, a list of hashes) to a table. PostgreSQL costs a
 * function's rows at 100 whatever it holds, and for a table of a few thousand rows found scanning it all
 * cheaper than 100 probes: a delete of two plants read every plant. Each row must be a probe of its key.
 */
describe.if(onPostgres)("PostgreSQL finds a group's rows by their keys, whatever the table holds", () => {
  const ROWS = 20_000;

  test(`deletes, keyed creates and token lookups probe their keys in tables of ${ROWS} rows`, async () => {
    const { client: own } = connect({ ...postgresTarget(await freshPostgresDatabase()), statementTimeoutMs: 0 }, 2);
    try {
      await own`INSERT INTO users (name, created_at) VALUES ('a', now()), ('b', now())`;
      await own`INSERT INTO plants (owner_id, id, name) SELECT 1 + g % 2, g, 'Plant ' || g FROM generate_series(1, ${ROWS}) g`;
      await own`INSERT INTO tokens (user_id, hash, created_at, name, scopes)
        SELECT 1 + g % 2, md5(g::text), now(), 'load', 7 FROM generate_series(1, ${ROWS}) g`;
      await own`INSERT INTO idempotency_keys (owner_id, key, request_hash, status, body, created_at)
        SELECT 1 + g % 2, 'key-' || g, 'hash', 200, '{}', now() FROM generate_series(1, ${ROWS}) g`;
      await own`VACUUM ANALYZE`;
      const seen: Array<{ sql: string; params: unknown[] }> = [];
      const recording = recordingClient(own, seen);
      const plants = createPostgresPlantStore(recording);
      const answer = { status: 200, body: "{}", etag: '"e"' };
      const keyed = { key: "new-key", requestHash: "h", at: Date.now(), expiredAt: 0, created: answer, taken: answer };
      await Promise.all([plants.deletePlant(1, 2n), plants.deletePlant(2, 3n)]);
      await plants.createPlantOnce(1, { id: 99_999_999, name: "new" } as NewPlant, keyed);
      await createPostgresTokenStore(recording).authenticate("not a token");
      const groups = [
        ...new Map(seen.filter(({ sql }) => /json|string_to_array/.test(sql)).map((s) => [s.sql, s])).values(),
      ];
      expect(groups.map(({ sql }) => sql.trim().split(/\s+/).slice(0, 3).join(" "))).toEqual([
        "WITH inserted AS",
        "WITH q AS",
        expect.stringMatching(/^SELECT/),
      ]);
      const connection = await own.reserve();
      try {
        for (const mode of PLAN_MODES) {
          await connection.unsafe(`SET plan_cache_mode = ${mode}`);
          for (const { sql, params } of groups) {
            const scans = (await explain(connection, sql, params))
              .filter((node) => node["Node Type"] === "Seq Scan")
              .map((node) => node["Relation Name"]);
            expect({ mode, sql, scans }).toEqual({ mode, sql, scans: [] });
          }
        }
      } finally {
        connection.release();
      }
    } finally {
      await own.close();
    }
  });
});
