import type { SQL } from "bun";
import type { NewPlant, Plant } from "../../core/plant";
import { LIST_CHUNK_SIZE, type PlantFilter, type PlantPage, type PlantStore, trimToPage } from "../../core/stores";
import { createGroupInsert, type PlantRow } from "./group-insert";
import { createGroups } from "./groups";
import { PLANT_FIELDS, PLANT_SQL, pagesSql } from "./queries";

/** How many ids one step of the walk to a long page's last plant reads (an index-only scan). */
const BOUNDARY_STEP = 10_000;

/** A row as its owner sees it: no id, nothing null. */
function toPlant(row: PlantRow): Plant {
  const plant: PlantRow = {};
  for (const { field } of PLANT_FIELDS) if (field !== "id" && row[field] !== null) plant[field] = row[field];
  return plant as unknown as Plant;
}

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

type Listed = Array<PlantRow & { id: string }>;
const inIdOrder = (rows: Listed) =>
  rows.every((row, i) => i === 0 || compareIds((rows[i - 1] as Listed[0]).id, row.id) < 0);

/** Where a filter's statements sit: with or without a cursor, with or without a tag. */
const shapeOf = ({ after, tag }: PlantFilter) => (after === undefined ? 0 : 2) + (tag === undefined ? 0 : 1);
const SHAPES: PlantFilter[] = [{}, { tag: "" }, { after: 0n }, { after: 0n, tag: "" }];

/** One page asked for: its owner, filter and row count. */
interface PageAsk {
  ownerId: number;
  filter: PlantFilter;
  limit: number;
}

/** The pages asked for, as the recordset pagesSql reads (a bigint cursor as its decimal text, read exactly). */
const recordset = (asks: PageAsk[]) =>
  `[${asks
    .map(
      ({ ownerId, filter: { tag, after }, limit }, k) =>
        `{"k":${k},"o":${ownerId},"t":${tag === undefined ? "null" : JSON.stringify(tag)},"a":${after === undefined ? "null" : `"${after}"`},"l":${limit}}`,
    )
    .join(",")}]`;

/** Every statement is scoped to one owner; writes commit before they resolve (creates and deletes in groups). */
export function createPostgresPlantStore(client: SQL, listChunkSize = LIST_CHUNK_SIZE): PlantStore {
  const creates = createGroupInsert(client);
  // Pages asked for together share a statement per shape (groups.ts; docs/decisions/0002).
  const pageGroups = SHAPES.map((shape) => {
    const text = pagesSql(shape, listChunkSize + 1);
    return createGroups<PageAsk, Listed>(async (group) => {
      const rows = (await client.unsafe(text, [recordset(group.map((waiting) => waiting.item))])) as Array<
        Listed[0] & { k: number }
      >;
      const pages: Listed[] = group.map(() => []);
      for (const row of rows) (pages[row.k] as Listed).push(row);
      group.forEach((waiting, k) => {
        waiting.resolve(pages[k] as Listed);
      });
    });
  });
  const idTexts = SHAPES.map(PLANT_SQL.ids);

  /** Ids alone, for the filter, from its cursor on. */
  function ids(ownerId: number, filter: PlantFilter, limit: number) {
    const params: unknown[] = [ownerId];
    if (filter.tag !== undefined) params.push(filter.tag);
    if (filter.after !== undefined) params.push(filter.after);
    params.push(limit);
    return client.unsafe(idTexts[shapeOf(filter)] as string, params) as Promise<Array<{ id: string }>>;
  }

  // Deletes that arrive together share one statement, and so one transaction and one WAL flush,
  // as creates do; a repeat of a plant within a group is a 404, as it would be one after another.
  // A delete the group did not make (the plant is not there, or another session holds it
  // locked) is sent again alone, outside the group's slot, for its own answer.
  const removals = createGroups<{ ownerId: number; id: bigint }, boolean>(async (group) => {
    const json = `[${group.map(({ item }) => `{"o":${item.ownerId},"i":"${item.id}"}`).join(",")}]`;
    const rows = (await client.unsafe(PLANT_SQL.deleteGroup, [json])) as Array<{ key: string }>;
    const gone = new Set(rows.map((row) => row.key));
    for (const { item, resolve, reject } of group) {
      if (gone.delete(`${item.ownerId}:${item.id}`)) resolve(true);
      else client.unsafe(PLANT_SQL.deleteOne, [item.ownerId, item.id]).then((rows) => resolve(rows.length > 0), reject);
    }
  });

  return {
    listChunkSize,

    async createPlant(ownerId: number, plant: NewPlant) {
      const row = await creates.insert(ownerId, plant);
      return row && toPlant(row);
    },

    async listPage(ownerId, filter, count, upTo): Promise<PlantPage> {
      // The page statements read at most a chunk and one row (pagesSql); every caller asks no more.
      if (count > listChunkSize) throw new Error(`a page of ${count} plants is past the chunk of ${listChunkSize}`);
      const pages = pageGroups[shapeOf(filter)] as (typeof pageGroups)[0];
      const listed = await pages.add({ ownerId, filter, limit: count + 1 });
      // Each page's rows come in id order from its index walk; the statement does not promise
      // that order across the join, so it is checked, and restored should it ever differ.
      if (!inIdOrder(listed)) listed.sort((x, y) => compareIds(x.id, y.id));
      const { more, lastId } = trimToPage(listed, count, upTo, (row) => BigInt(row.id));
      return { plants: listed.map(toPlant), lastId, more };
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
        const last = BigInt((found[step - 1] as { id: string }).id);
        if (left === 0) return { id: last, more: found.length > step };
        after = last;
      }
    },

    async getPlant(ownerId, id) {
      const [row] = (await client.unsafe(PLANT_SQL.get, [ownerId, id])) as PlantRow[];
      return row && toPlant(row);
    },

    deletePlant: (ownerId, id) => removals.add({ ownerId, id }),
  };
}
