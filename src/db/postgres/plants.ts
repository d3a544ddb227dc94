import type { SQL } from "bun";
import type { KeyedCreate, KeyedOutcome } from "../../core/idempotency";
import type { NewPlant, Plant } from "../../core/plant";
import { LIST_CHUNK_SIZE, type PlantFilter, type PlantStore } from "../../core/stores";
import { nthId, SHAPES, shapeOf, toPage, updateParams, valuesOf } from "../plants";
import { countOf } from "./client";
import { createGroupInsert, type PlantRow } from "./group-insert";
import { createGroups } from "./groups";
import { IDEMPOTENCY_SQL, PLANT_FIELDS, PLANT_SQL, VALUE_FIELDS } from "./queries";

/** A row as its owner sees it: no id, nothing null. */
function toPlant(row: PlantRow): Plant {
  const plant: PlantRow = {};
  for (const { field } of PLANT_FIELDS) if (field !== "id" && row[field] !== null) plant[field] = row[field];
  return plant as unknown as Plant;
}

type Listed = Array<PlantRow & { id: string }>;

/** Creates and deletes go in groups (groups.ts); every write commits before it resolves. */
export function createPostgresPlantStore(client: SQL, listChunkSize = LIST_CHUNK_SIZE): PlantStore {
  const creates = createGroupInsert(client);
  const pageTexts = SHAPES.map(PLANT_SQL.page);
  const idTexts = SHAPES.map(PLANT_SQL.ids);

  function list(texts: string[], ownerId: number, filter: PlantFilter, limit: number) {
    const params = [ownerId, filter.tag, filter.after, limit].filter((param) => param !== undefined);
    return client.unsafe(texts[shapeOf(filter)] as string, params) as Promise<Listed>;
  }

  // A delete the group did not make (the plant is gone, or locked) goes again alone, for its own answer.
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

    /** A record past its time holding the key is dropped, and the create sent again. */
    async createPlantOnce(ownerId: number, plant: NewPlant, keyed: KeyedCreate): Promise<KeyedOutcome> {
      const first = await creates.insertOnce(ownerId, plant, keyed);
      if (first.kind !== "expired") return first;
      await client.unsafe(IDEMPOTENCY_SQL.dropExpired, [ownerId, keyed.key, new Date(keyed.expiredAt)]);
      const second = await creates.insertOnce(ownerId, plant, keyed);
      return second.kind === "expired" ? { kind: "busy" } : second;
    },
    pruneIdempotencyKeys: (before, count) => countOf(client, IDEMPOTENCY_SQL.prune, [new Date(before), count]),
    async listPage(ownerId, filter, count, upTo, withIds) {
      const listed = await list(pageTexts, ownerId, filter, count + 1);
      return toPage(listed, count, upTo, withIds, (row) => BigInt(row.id), toPlant);
    },

    nthId: (ownerId, filter, count) =>
      nthId(filter, count, async (at, limit) => (await list(idTexts, ownerId, at, limit)).map((row) => BigInt(row.id))),

    async getPlant(ownerId, id) {
      const [row] = (await client.unsafe(PLANT_SQL.get, [ownerId, id])) as PlantRow[];
      return row && toPlant(row);
    },

    async updatePlant(ownerId, id, change, expected) {
      const sql = expected ? PLANT_SQL.updateIf : PLANT_SQL.update;
      const [row] = (await client.unsafe(sql, updateParams(ownerId, id, change, VALUE_FIELDS, expected))) as PlantRow[];
      return row && toPlant(row);
    },

    // A conditional delete goes alone: its precondition is part of its own statement.
    deletePlant: async (ownerId, id, expected) =>
      expected
        ? (await client.unsafe(PLANT_SQL.deleteIf, [ownerId, id, ...valuesOf(expected, VALUE_FIELDS)])).length > 0
        : removals.add({ ownerId, id }),
  };
}
