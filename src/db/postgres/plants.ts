import type { SQL } from "bun";
import type { NewPlant, Plant } from "../../core/plant";
import { LIST_CHUNK_SIZE, type PlantFilter, type PlantPage, type PlantStore, trimToPage } from "../../core/stores";
import { shapeOf } from "../list-shapes";
import { POSTGRES_SQL } from "./built-sql";
import { createGroupInsert } from "./group-insert";
import { createGroups } from "./groups";

/** How many ids one step of the walk to a long page's last plant reads (an index-only scan). */
const BOUNDARY_STEP = 10_000;

const toPlant = (name: string, tag: string | null): Plant => (tag === null ? { name } : { name, tag });

/**
 * Two int8 values in PostgreSQL's decimal text, compared as numbers without making bigints:
 * the sign, then the number of digits, then the digits.
 */
export function compareIds(a: string, b: string): number {
  const negative = a.startsWith("-");
  if (negative !== b.startsWith("-")) return negative ? -1 : 1;
  const order = a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0;
  return negative ? 0 - order : order;
}

const inIdOrder = (rows: Listed) =>
  rows.every((row, i) => i === 0 || compareIds((rows[i - 1] as Listed[0])[0], row[0]) < 0);

/** One page asked for: its owner, tag, cursor and row count. */
interface PageAsk {
  ownerId: number;
  tag: string | undefined;
  after: bigint | undefined;
  limit: number;
}
type Listed = Array<[id: string, name: string, tag: string | null]>;

/**
 * The pages asked for, as the recordset the page statements read: JSON written here (a bigint
 * cursor goes as its decimal text, which PostgreSQL reads into bigint exactly) and sent as text.
 */
function recordset(asks: PageAsk[]): string {
  const rows = asks.map(
    ({ ownerId, tag, after, limit }, k) =>
      `{"k":${k},"o":${ownerId},"t":${tag === undefined ? "null" : JSON.stringify(tag)},"a":${after === undefined ? "null" : `"${after}"`},"l":${limit}}`,
  );
  return `[${rows.join(",")}]`;
}

/**
 * The rows of several pages of one shape in one statement: each page asked is a row of the
 * recordset, joined to its own keyset query (the same index walk as one page alone, the plan
 * test checks both). Rows come back tagged with their page's place in the group.
 *
 * Each page's walk is capped by a constant, `maxRows`, and cut to its own count above that:
 * the planner takes a LIMIT it cannot see as a tenth of the owner's plants, so with only
 * `LIMIT q.l` a large owner made the statement look costly enough for PostgreSQL to JIT-compile
 * it on every run (2-25 ms where the page takes 0.03 ms, on a 200,000-plant owner; the bench's
 * reads fell to a quarter as its store grew). The plan test holds the cost below
 * `jit_above_cost` for such an owner.
 */
function pagesSql(maxRows: number): string[] {
  const { pageWalks, walkCap } = POSTGRES_SQL.plants;
  return pageWalks.map(
    (walk) => `select q.k, p.id, p.name, p.tag
      from json_to_recordset($1::text::json) as q(k integer, o integer, t text, a bigint, l integer)
      cross join lateral (select * from (${walk.replace(walkCap, String(maxRows))}) as walk limit q.l) as p`,
  );
}

/**
 * The plants of a group of deletes, each scoped to its owner; the keys of those deleted. A plant
 * another session holds locked (an open transaction in a psql shell) is skipped, not waited
 * for: its delete is sent again alone (DELETE_ONE), so it waits for that lock by itself and
 * the other deletes of its group are not held up or failed with it.
 */
const DELETE_GROUP = `
  DELETE FROM plants USING (
    SELECT p.owner_id, p.id FROM plants p
    JOIN json_to_recordset($1::text::json) AS q(o integer, i bigint) ON p.owner_id = q.o AND p.id = q.i
    FOR UPDATE OF p SKIP LOCKED
  ) AS free
  WHERE plants.owner_id = free.owner_id AND plants.id = free.id
  RETURNING plants.owner_id::text || ':' || plants.id::text`;
const DELETE_ONE = "DELETE FROM plants WHERE owner_id = $1 AND id = $2 RETURNING 1";

/** Every statement is scoped to one owner; writes commit before they resolve (creates and deletes in groups). */
export function createPostgresPlantStore(client: SQL, listChunkSize = LIST_CHUNK_SIZE): PlantStore {
  const creates = createGroupInsert(client);
  const { ids: idTexts, getOne } = POSTGRES_SQL.plants;
  // Pages asked for together share a statement per shape (groups.ts), as token lookups do:
  // PostgreSQL's CPU per read 16-21 µs against 24-26 µs one statement each, in alternating
  // rounds of the read scenario (`bun bench/cpu-split.ts` gives the same split).
  const pageGroups = pagesSql(listChunkSize + 1).map((text) =>
    createGroups<PageAsk, Listed>(async (group) => {
      const rows = (await client.unsafe(text, [recordset(group.map((waiting) => waiting.item))]).values()) as Array<
        [k: number, ...Listed[0]]
      >;
      const pages: Listed[] = group.map(() => []);
      for (const [k, id, name, tag] of rows) (pages[k] as Listed).push([id, name, tag]);
      group.forEach((waiting, k) => {
        waiting.resolve(pages[k] as Listed);
      });
    }),
  );
  /** Ids alone, for the filter, from its cursor on. */
  function ids(ownerId: number, filter: PlantFilter, limit: number) {
    const params: Array<number | bigint | string> = [ownerId];
    if (filter.tag !== undefined) params.push(filter.tag);
    if (filter.after !== undefined) params.push(filter.after);
    params.push(limit);
    return client.unsafe(idTexts[shapeOf(filter)] as string, params).values() as Promise<Array<[id: string]>>;
  }
  // Deletes that arrive together share one statement, and so one transaction and one WAL flush,
  // as creates do; a repeat of a plant within a group is a 404, as it would be one after another.
  // A delete the group did not make (the plant is not there, or another session holds it
  // locked) is sent again alone, outside the group's slot, for its own answer.
  const removals = createGroups<{ ownerId: number; id: bigint }, boolean>(async (group) => {
    const json = `[${group.map(({ item }) => `{"o":${item.ownerId},"i":"${item.id}"}`).join(",")}]`;
    const gone = new Set(
      ((await client.unsafe(DELETE_GROUP, [json]).values()) as Array<[key: string]>).map(([key]) => key),
    );
    for (const { item, resolve, reject } of group) {
      if (gone.delete(`${item.ownerId}:${item.id}`)) resolve(true);
      else
        client
          .unsafe(DELETE_ONE, [item.ownerId, item.id])
          .values()
          .then((rows) => resolve(rows.length > 0), reject);
    }
  });

  return {
    listChunkSize,

    async createPlant(ownerId: number, plant: NewPlant) {
      const stored = { name: plant.name, tag: plant.tag ?? null };
      return (await creates.insert(ownerId, BigInt(plant.id), stored.name, stored.tag))
        ? toPlant(stored.name, stored.tag)
        : undefined;
    },

    async listPage(ownerId, filter, count, upTo): Promise<PlantPage> {
      // The page statements read at most a chunk and one row (pagesSql); every caller asks no more.
      if (count > listChunkSize) throw new Error(`a page of ${count} plants is past the chunk of ${listChunkSize}`);
      // int8 comes as its decimal text (client.ts); the page's last id is made an exact bigint.
      const pages = pageGroups[shapeOf(filter)] as (typeof pageGroups)[0];
      const listed = await pages.add({ ownerId, tag: filter.tag, after: filter.after, limit: count + 1 });
      // Each page's rows come in id order from its index walk; the statement does not promise
      // that order across the join, so it is checked, and restored should it ever differ.
      if (!inIdOrder(listed)) listed.sort((x, y) => compareIds(x[0], y[0]));
      const { more, lastId } = trimToPage(listed, count, upTo, (row) => BigInt(row[0]));
      return { plants: listed.map(([, name, tag]) => toPlant(name, tag)), lastId, more };
    },

    async nthId(ownerId, filter, count) {
      if (count <= 0) return undefined;
      let after = filter.after;
      let left = count;
      for (;;) {
        const step = Math.min(left, BOUNDARY_STEP);
        const found = await ids(ownerId, { ...filter, after }, step + 1);
        if (found.length < step) return undefined;
        left -= step;
        const last = BigInt((found[step - 1] as [string])[0]);
        if (left === 0) return { id: last, more: found.length > step };
        after = last;
      }
    },

    async getPlant(ownerId, id) {
      const [row] = (await client.unsafe(getOne, [ownerId, id]).values()) as Array<[name: string, tag: string | null]>;
      return row && toPlant(row[0], row[1]);
    },

    async deletePlant(ownerId, id) {
      return removals.add({ ownerId, id });
    },
  };
}
