import type { SQL } from "bun";
import type { KeyedCreate, KeyedOutcome } from "../../core/idempotency";
import type { NewPlant, Plant } from "../../core/plant";
import { LIST_CHUNK_SIZE, type PlantFilter, type PlantPage, type PlantStore, trimToPage } from "../../core/stores";
import { createGroupInsert, type PlantRow } from "./group-insert";
import { createGroups } from "./groups";
import { IDEMPOTENCY_SQL } from "./idempotency-queries";
import { PLANT_FIELDS, PLANT_SQL } from "./queries";

/** How many ids one step of the walk to a long page's last plant reads (an index-only scan). */
const BOUNDARY_STEP = 10_000;

/** A row as its owner sees it: no id, nothing null. */
function toPlant(row: PlantRow): Plant {
  const plant: PlantRow = {};
  for (const { field } of PLANT_FIELDS) if (field !== "id" && row[field] !== null) plant[field] = row[field];
  return plant as unknown as Plant;
}

type Listed = Array<PlantRow & { id: string }>;

/** Where a filter's statements sit: with or without a cursor, with or without a tag. */
const shapeOf = ({ after, tag }: PlantFilter) => (after === undefined ? 0 : 2) + (tag === undefined ? 0 : 1);
const SHAPES: PlantFilter[] = [{}, { tag: "" }, { after: 0n }, { after: 0n, tag: "" }];

/** Every statement is scoped to one owner; writes commit before they resolve (creates and deletes in groups). */
export function createPostgresPlantStore(client: SQL, listChunkSize = LIST_CHUNK_SIZE): PlantStore {
  const creates = createGroupInsert(client);
  const pageTexts = SHAPES.map(PLANT_SQL.page);
  const idTexts = SHAPES.map(PLANT_SQL.ids);

  /** The plants (or their ids alone) matching the filter, from its cursor on, by id. */
  function list(texts: string[], ownerId: number, filter: PlantFilter, limit: number) {
    const params: unknown[] = [ownerId];
    if (filter.tag !== undefined) params.push(filter.tag);
    if (filter.after !== undefined) params.push(filter.after);
    params.push(limit);
    return client.unsafe(texts[shapeOf(filter)] as string, params) as Promise<Listed>;
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

    /** A record past its time holding the key is dropped first, and the create sent again (rare: the pruner drops most). */
    async createPlantOnce(ownerId: number, plant: NewPlant, keyed: KeyedCreate): Promise<KeyedOutcome> {
      const first = await creates.insertOnce(ownerId, plant, keyed);
      if (first.kind !== "expired") return first;
      await client.unsafe(IDEMPOTENCY_SQL.dropExpired, [ownerId, keyed.key, new Date(keyed.expiredAt)]);
      const second = await creates.insertOnce(ownerId, plant, keyed);
      return second.kind === "expired" ? { kind: "busy" } : second;
    },

    async pruneIdempotencyKeys(before: number, count: number) {
      const [{ n }] = (await client.unsafe(IDEMPOTENCY_SQL.prune, [new Date(before), count])) as [{ n: number }];
      return n;
    },

    async listPage(ownerId, filter, count, upTo, withIds): Promise<PlantPage> {
      const listed = await list(pageTexts, ownerId, filter, count + 1);
      const { more, lastId } = trimToPage(listed, count, upTo, (row) => BigInt(row.id));
      if (!withIds) return { plants: listed.map(toPlant), lastId, more };
      return { plants: listed.map(toPlant), ids: listed.map((row) => BigInt(row.id)), lastId, more };
    },

    async nthId(ownerId, filter, count) {
      if (count <= 0) return undefined;
      let after = filter.after;
      let left = count;
      for (;;) {
        const step = Math.min(left, BOUNDARY_STEP);
        const found = await list(idTexts, ownerId, { ...filter, after }, step + 1);
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

    async updatePlant(ownerId, id, { name, tag }, expected) {
      const params: unknown[] = [ownerId, id, name !== undefined, name ?? null, tag !== undefined, tag ?? null];
      if (expected) params.push(expected.name, expected.tag ?? null);
      const sql = expected ? PLANT_SQL.updateIf : PLANT_SQL.update;
      const [row] = (await client.unsafe(sql, params)) as PlantRow[];
      return row && toPlant(row);
    },

    // A conditional delete goes alone: its precondition is part of its own statement.
    deletePlant: async (ownerId, id, expected) =>
      expected
        ? (await client.unsafe(PLANT_SQL.deleteIf, [ownerId, id, expected.name, expected.tag ?? null])).length > 0
        : removals.add({ ownerId, id }),
  };
}
