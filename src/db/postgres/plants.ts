import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { NewPlant, Plant } from "../../plants/model";
import { LIST_CHUNK_SIZE, type PlantFilter, type PlantPage, type PlantStore, trimToPage } from "../stores";
import type { PostgresDatabase } from "./client";
import { createGroupInsert } from "./group-insert";
import { plants } from "./schema";

/** How many ids one step of the walk to a long page's last plant reads (an index-only scan). */
const BOUNDARY_STEP = 10_000;

const toPlant = (row: { name: string; tag: string | null }): Plant =>
  row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };

/**
 * The owner's plants, after an id and with a tag when asked, in id order: four prepared
 * statements per shape (rows or ids alone), so each plan is made once per connection.
 */
function listStatements(db: PostgresDatabase, idsOnly: boolean) {
  const shapes = [false, true].flatMap((after) => [false, true].map((tag) => ({ after, tag })));
  return shapes.map(({ after, tag }) => {
    const conditions = [eq(plants.ownerId, sql.placeholder("ownerId"))];
    if (tag) conditions.push(eq(plants.tag, sql.placeholder("tag")));
    if (after) conditions.push(gt(plants.id, sql.placeholder("after")));
    const select = idsOnly
      ? db.select({ id: plants.id })
      : db.select({ id: plants.id, name: plants.name, tag: plants.tag });
    const name = `plants_list_${idsOnly ? "ids" : "rows"}${after ? "_after" : ""}${tag ? "_tag" : ""}`;
    return select
      .from(plants)
      .where(and(...conditions))
      .orderBy(asc(plants.id))
      .limit(sql.placeholder("limit"))
      .prepare(name);
  });
}

/** Every statement is scoped to one owner; writes commit before they resolve (creates in groups, group-insert.ts). */
export function createPostgresPlantStore(db: PostgresDatabase, listChunkSize = LIST_CHUNK_SIZE): PlantStore {
  const creates = createGroupInsert(db);
  const rows = listStatements(db, false);
  const ids = listStatements(db, true);
  const shape = ({ after, tag }: PlantFilter) => (after === undefined ? 0 : 2) + (tag === undefined ? 0 : 1);
  const findOne = db
    .select({ name: plants.name, tag: plants.tag })
    .from(plants)
    .where(and(eq(plants.ownerId, sql.placeholder("ownerId")), eq(plants.id, sql.placeholder("id"))))
    .prepare("plants_get");
  const remove = db
    .delete(plants)
    .where(and(eq(plants.ownerId, sql.placeholder("ownerId")), eq(plants.id, sql.placeholder("id"))))
    .returning({ ownerId: plants.ownerId })
    .prepare("plants_delete");

  return {
    listChunkSize,

    async createPlant(ownerId: number, plant: NewPlant) {
      const stored = { name: plant.name, tag: plant.tag ?? null };
      return (await creates.insert(ownerId, BigInt(plant.id), stored.name, stored.tag)) ? toPlant(stored) : undefined;
    },

    async listPage(ownerId, filter, count, upTo): Promise<PlantPage> {
      const statement = rows[shape(filter)] as (typeof rows)[0];
      const found = (await statement.execute({
        ownerId,
        tag: filter.tag,
        after: filter.after,
        limit: count + 1,
      })) as Array<{
        id: bigint;
        name: string;
        tag: string | null;
      }>;
      const { more, lastId } = trimToPage(found, count, upTo);
      return { plants: found.map(toPlant), lastId, more };
    },

    async nthId(ownerId, filter, count) {
      if (count <= 0) return undefined;
      let after = filter.after;
      let left = count;
      for (;;) {
        const step = Math.min(left, BOUNDARY_STEP);
        const statement = ids[shape({ ...filter, after })] as (typeof ids)[0];
        const found = await statement.execute({ ownerId, tag: filter.tag, after, limit: step + 1 });
        if (found.length < step) return undefined;
        left -= step;
        const last = (found[step - 1] as { id: bigint }).id;
        if (left === 0) return { id: last, more: found.length > step };
        after = last;
      }
    },

    async getPlant(ownerId, id) {
      const [row] = await findOne.execute({ ownerId, id });
      return row && toPlant(row);
    },

    async deletePlant(ownerId, id) {
      return (await remove.execute({ ownerId, id })).length > 0;
    },
  };
}
