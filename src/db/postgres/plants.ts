import type { SQL } from "bun";
import type { KeyedCreate, KeyedOutcome } from "../../core/idempotency";
import type { NewPlant, Plant } from "../../core/plant";
import { LIST_CHUNK_SIZE, type PlantFilter, type PlantStore } from "../../core/stores";
import { nthId, type PlantStoreOptions, SHAPES, shapeOf, toPage, unchanged, updateParams, valuesOf } from "../plants";
import { countOf } from "./client";
import { IDEMPOTENCY_SQL, PLANT_FIELDS, PLANT_SQL, VALUE_FIELDS } from "./queries";
import { createWriteGroups, type PlantRow } from "./write-groups";

/** A row as its owner sees it: no id, nothing null. */
function toPlant(row: PlantRow): Plant {
  const plant: PlantRow = {};
  for (const { field } of PLANT_FIELDS) if (field !== "id" && row[field] !== null) plant[field] = row[field];
  return plant as unknown as Plant;
}

type Listed = Array<PlantRow & { id: string }>;

/** Creates and deletes go in groups (write-groups.ts); every write commits before it resolves, its change logged with it. */
export function createPostgresPlantStore(
  client: SQL,
  { clock = Date.now, logged = () => {}, listChunkSize = LIST_CHUNK_SIZE }: Partial<PlantStoreOptions> = {},
): PlantStore {
  const writes = createWriteGroups(client, clock);
  const logging = async <T>(write: Promise<T>): Promise<T> => {
    const result = await write;
    logged();
    return result;
  };
  const pageTexts = SHAPES.map(PLANT_SQL.page);
  const idTexts = SHAPES.map(PLANT_SQL.ids);

  function list(texts: string[], ownerId: number, filter: PlantFilter, limit: number) {
    const params = [ownerId, filter.tag, filter.after, limit].filter((param) => param !== undefined);
    return client.unsafe(texts[shapeOf(filter)] as string, params) as Promise<Listed>;
  }

  return {
    listChunkSize,
    async createPlant(ownerId: number, plant: NewPlant) {
      const row = await logging(writes.insert(ownerId, plant));
      return row && toPlant(row);
    },

    /** A record past its time holding the key is dropped, and the create sent again. */
    async createPlantOnce(ownerId: number, plant: NewPlant, keyed: KeyedCreate): Promise<KeyedOutcome> {
      const first = await logging(writes.insertOnce(ownerId, plant, keyed));
      if (first.kind !== "expired") return first;
      await client.unsafe(IDEMPOTENCY_SQL.dropExpired, [ownerId, keyed.key, new Date(keyed.expiredAt)]);
      const second = await logging(writes.insertOnce(ownerId, plant, keyed));
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
      const params = [...updateParams(ownerId, id, change, VALUE_FIELDS, expected), clock()];
      const [row] = (await logging(client.unsafe(sql, params))) as PlantRow[];
      if (row) return toPlant(row);
      const [current] = (await client.unsafe(PLANT_SQL.get, [ownerId, id])) as PlantRow[];
      return unchanged(current && toPlant(current), change, VALUE_FIELDS, expected);
    },

    // A conditional delete goes alone: its precondition is part of its own statement.
    deletePlant: async (ownerId, id, expected) =>
      logging(
        expected
          ? client
              .unsafe(PLANT_SQL.deleteIf, [ownerId, id, ...valuesOf(expected, VALUE_FIELDS), clock()])
              .then((rows) => rows.length > 0)
          : writes.remove(ownerId, id),
      ),
  };
}
