import { and, asc, eq, type Placeholder, sql } from "drizzle-orm";
import { boundInteger } from "../db/bound";
import type { AppDatabase } from "../db/client";
import type { GroupCommit } from "../db/group-commit";
import { plants } from "../db/schema";
import type { NewPlant, Plant } from "./model";

/** SQLite reads LIMIT -1 as "no limit". */
const NO_LIMIT = -1;

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
 * Every statement is prepared once and always scoped to one owner. Writes go through group
 * commit, so they resolve only once durable.
 */
export function createPlantQueries(db: AppDatabase, writes: GroupCommit) {
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

    /** True when the owner had the plant and it is gone now. */
    async deletePlant(ownerId: number, id: bigint): Promise<boolean> {
      return (await writes.run(() => remove.get({ ownerId, id }))) !== undefined;
    },
  };
}

export type PlantQueries = ReturnType<typeof createPlantQueries>;
