import { and, asc, eq, sql } from "drizzle-orm";
import type { AppDatabase } from "../db/client";
import { plants } from "../db/schema";
import type { NewPlant, Plant } from "./model";

/** SQLite reads LIMIT -1 as "no limit". */
const NO_LIMIT = -1;

function toPlant(row: { name: string; tag: string | null }): Plant {
  return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };
}

/** Every statement is prepared once and always scoped to one owner. */
export function createPlantQueries(db: AppDatabase) {
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

  const list = db
    .select({ name: plants.name, tag: plants.tag })
    .from(plants)
    .where(eq(plants.ownerId, sql.placeholder("ownerId")))
    .orderBy(asc(plants.id))
    .limit(sql.placeholder("limit"))
    .prepare();

  const remove = db
    .delete(plants)
    .where(and(eq(plants.ownerId, sql.placeholder("ownerId")), eq(plants.id, sql.placeholder("id"))))
    .returning({ ownerId: plants.ownerId })
    .prepare();

  return {
    /** The stored plant, or undefined when the owner already has one with this id. */
    createPlant(ownerId: number, plant: NewPlant): Plant | undefined {
      const row = insert.get({ ownerId, id: plant.id, name: plant.name, tag: plant.tag ?? null });
      return row && toPlant(row);
    },

    listPlants(ownerId: number, limit: number | undefined): Plant[] {
      return list.all({ ownerId, limit: limit ?? NO_LIMIT }).map(toPlant);
    },

    /** True when the owner had the plant and it is gone now. */
    deletePlant(ownerId: number, id: bigint): boolean {
      return remove.get({ ownerId, id }) !== undefined;
    },
  };
}

export type PlantQueries = ReturnType<typeof createPlantQueries>;
