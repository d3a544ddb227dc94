import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { NewPlant, Plant } from "../../plants/model";
import { positional } from "../positional";
import { LIST_CHUNK_SIZE, type PlantFilter, type PlantPage, type PlantStore, trimToPage } from "../stores";
import type { PostgresDatabase } from "./client";
import { createGroupInsert } from "./group-insert";
import { plants } from "./schema";

/** How many ids one step of the walk to a long page's last plant reads (an index-only scan). */
const BOUNDARY_STEP = 10_000;

const toPlant = (row: { name: string; tag: string | null }): Plant =>
  row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };

/**
 * The owner's plants, after an id and with a tag when asked, in id order, as SQL for the driver:
 * one text per shape (rows or ids alone), which Bun's client prepares once per connection.
 * Drizzle writes it from the schema; the driver runs it and returns bare arrays (Drizzle's
 * prepared query fills placeholders and maps every row through nested async spans: 10 % of
 * the instance's CPU under `GET /plants` load, `bun --cpu-prof`).
 */
function listSql(db: PostgresDatabase, idsOnly: boolean): string[] {
  const shapes = [false, true].flatMap((after) => [false, true].map((tag) => ({ after, tag })));
  return shapes.map(({ after, tag }) => {
    const conditions = [eq(plants.ownerId, sql.placeholder("ownerId"))];
    if (tag) conditions.push(eq(plants.tag, sql.placeholder("tag")));
    if (after) conditions.push(gt(plants.id, sql.placeholder("after")));
    const select = idsOnly
      ? db.select({ id: plants.id })
      : db.select({ id: plants.id, name: plants.name, tag: plants.tag });
    const query = select
      .from(plants)
      .where(and(...conditions))
      .orderBy(asc(plants.id))
      .limit(sql.placeholder("limit"));
    return positional(query, ["ownerId", ...(tag ? ["tag"] : []), ...(after ? ["after"] : []), "limit"]);
  });
}

/** Every statement is scoped to one owner; writes commit before they resolve (creates in groups, group-insert.ts). */
export function createPostgresPlantStore(db: PostgresDatabase, listChunkSize = LIST_CHUNK_SIZE): PlantStore {
  const creates = createGroupInsert(db);
  const client = db.$client;
  const rowsSql = listSql(db, false);
  const idsSql = listSql(db, true);
  /** A list's SQL for the filter, and its parameters in the order the SQL binds them. */
  function bound(texts: string[], ownerId: number, { after, tag }: PlantFilter, limit: number) {
    const params: Array<number | bigint | string> = [ownerId];
    if (tag !== undefined) params.push(tag);
    if (after !== undefined) params.push(after);
    params.push(limit);
    return client.unsafe(texts[(after === undefined ? 0 : 2) + (tag === undefined ? 0 : 1)] as string, params);
  }
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
      // int8 comes as its decimal text (client.ts), made an exact bigint here.
      const values = (await bound(rowsSql, ownerId, filter, count + 1).values()) as Array<
        [string, string, string | null]
      >;
      const found = values.map(([id, name, tag]) => ({ id: BigInt(id), name, tag }));
      const { more, lastId } = trimToPage(found, count, upTo);
      return { plants: found.map(toPlant), lastId, more };
    },

    async nthId(ownerId, filter, count) {
      if (count <= 0) return undefined;
      let after = filter.after;
      let left = count;
      for (;;) {
        const step = Math.min(left, BOUNDARY_STEP);
        const found = (await bound(idsSql, ownerId, { ...filter, after }, step + 1).values()) as Array<[string]>;
        if (found.length < step) return undefined;
        left -= step;
        const last = BigInt((found[step - 1] as [string])[0]);
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
