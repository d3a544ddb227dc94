import { and, asc, eq, gt, type Placeholder, type SQL, sql } from "drizzle-orm";
import { boundInteger } from "../db/bound";
import type { AppDatabase } from "../db/client";
import type { GroupCommit } from "../db/group-commit";
import { plants } from "../db/schema";
import type { NewPlant, Plant } from "./model";

/** SQLite reads LIMIT -1 as "no limit". */
const NO_LIMIT = -1;

/** How many plants one step of a long list reads; about 30 KiB of JSON. */
export const LIST_CHUNK_SIZE = 1000;

/** One step of a long list: its plants, and the id of the last one, exact (int64). */
export interface PlantChunk {
  plants: Plant[];
  lastId: bigint | undefined;
}

function toPlant(row: { name: string; tag: string | null }): Plant {
  return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };
}

/** The list query, unprepared: its SQL and plan are checked by a test. */
export function listPlantsQuery(db: AppDatabase) {
  return (
    db
      .select({ name: plants.name, tag: plants.tag })
      .from(plants)
      .where(eq(plants.ownerId, boundInteger("ownerId")))
      .orderBy(asc(plants.id))
      // Drizzle types LIMIT as a number or placeholder but writes any SQL it is given.
      .limit(boundInteger("limit") as unknown as Placeholder)
  );
}

/**
 * The keyset step of a long list, unprepared (its plan is checked by a test): the owner's
 * plants after an id, or from the first when `afterId` is false, in id order.
 */
export function listChunkQuery(db: AppDatabase, { afterId }: { afterId: boolean }) {
  const owner: SQL = eq(plants.ownerId, boundInteger("ownerId"));
  return db
    .select({ id: plants.id, name: plants.name, tag: plants.tag })
    .from(plants)
    .where(afterId ? and(owner, gt(plants.id, boundInteger("afterId"))) : owner)
    .orderBy(asc(plants.id))
    .limit(boundInteger("limit") as unknown as Placeholder);
}

/**
 * Every statement is prepared once and always scoped to one owner. Writes go through group
 * commit, so they resolve only once durable.
 */
export function createPlantQueries(db: AppDatabase, writes: GroupCommit, listChunkSize = LIST_CHUNK_SIZE) {
  const insert = db
    .insert(plants)
    .values({
      ownerId: sql.placeholder("ownerId"),
      id: sql.placeholder("id"),
      name: sql.placeholder("name"),
      tag: sql.placeholder("tag"),
    })
    .onConflictDoNothing()
    .returning({ name: plants.name, tag: plants.tag })
    .prepare();

  // Drizzle writes the list SQL; the driver runs it. Drizzle's own prepared query maps its
  // placeholders on every call, about 5 % of a list request, and the list is the hot path.
  const list = db.$client.prepare<unknown, [number, number]>(listPlantsQuery(db).toSQL().sql);

  // The chunk's last id is the next chunk's cursor: read as a bigint, since the driver rounds
  // integers past 2^53 to the nearest double, which would skip or repeat plants.
  const firstChunk = db.$client.prepare(listChunkQuery(db, { afterId: false }).toSQL().sql).safeIntegers(true);
  const nextChunk = db.$client.prepare(listChunkQuery(db, { afterId: true }).toSQL().sql).safeIntegers(true);

  const remove = db
    .delete(plants)
    .where(and(eq(plants.ownerId, sql.placeholder("ownerId")), eq(plants.id, sql.placeholder("id"))))
    .returning({ ownerId: plants.ownerId })
    .prepare();

  return {
    /** The stored plant, or undefined when the owner already has one with this id. */
    async createPlant(ownerId: number, plant: NewPlant): Promise<Plant | undefined> {
      const row = await writes.run(() =>
        insert.get({ ownerId, id: BigInt(plant.id), name: plant.name, tag: plant.tag ?? null }),
      );
      return row && toPlant(row);
    },

    listPlants(ownerId: number, limit?: number): Plant[] {
      const rows = list.all(ownerId, limit ?? NO_LIMIT) as Array<{ name: string; tag: string | null | undefined }>;
      // The driver's row objects are reused: a missing tag becomes undefined, which JSON leaves out.
      for (const row of rows) if (row.tag === null) row.tag = undefined;
      return rows as Plant[];
    },

    listChunkSize,

    /**
     * Up to `count` of the owner's plants with ids above `afterId` (from the lowest when it is
     * undefined), by id. Each call is one statement run to its end: no read stays open between
     * the steps of a list, so a slow reader never holds back the WAL.
     */
    listPlantsAfter(ownerId: number, afterId: bigint | undefined, count: number): PlantChunk {
      const rows = (
        afterId === undefined ? firstChunk.all(ownerId, count) : nextChunk.all(ownerId, afterId, count)
      ) as Array<{
        id: bigint | undefined;
        name: string;
        tag: string | null | undefined;
      }>;
      const lastId = rows.at(-1)?.id;
      // As in listPlants: JSON leaves out what is undefined, so the rows serve as Plants.
      for (const row of rows) {
        row.id = undefined;
        if (row.tag === null) row.tag = undefined;
      }
      return { plants: rows as Plant[], lastId };
    },

    /** True when the owner had the plant and it is gone now. */
    async deletePlant(ownerId: number, id: bigint): Promise<boolean> {
      return (await writes.run(() => remove.get({ ownerId, id }))) !== undefined;
    },
  };
}

export type PlantQueries = ReturnType<typeof createPlantQueries>;
