import { and, asc, eq, gt, type Placeholder, type SQL, sql } from "drizzle-orm";
import { LIST_SHAPES, listParamNames } from "../list-shapes";
import { positional } from "../positional";
import { boundInteger, boundText } from "./bound";
import type { AppDatabase } from "./client";
import { plants } from "./schema";

export interface ListShape {
  after?: boolean;
  tag?: boolean;
  idsOnly?: boolean;
}

/**
 * The keyset query behind every list, unprepared: the owner's plants, optionally after an id
 * and with a tag, in id order. `idsOnly` reads the ids alone, from the index. It binds the
 * owner, then the tag, then the id to start after, then the limit.
 */
export function listPlantsQuery(db: AppDatabase, { after = false, tag = false, idsOnly = false }: ListShape = {}) {
  const conditions: SQL[] = [eq(plants.ownerId, boundInteger("ownerId"))];
  if (tag) conditions.push(eq(plants.tag, boundText("tag")));
  if (after) conditions.push(gt(plants.id, boundInteger("after")));
  const select = idsOnly
    ? db.select({ id: plants.id })
    : db.select({ id: plants.id, name: plants.name, tag: plants.tag });
  return (
    select
      .from(plants)
      .where(and(...conditions))
      .orderBy(asc(plants.id))
      // Drizzle types LIMIT as a number or placeholder but writes any SQL it is given.
      .limit(boundInteger("limit") as unknown as Placeholder)
  );
}

/** The SQL of the plant store's reads: each list shape's (in LIST_SHAPES' order), and one plant's. */
export interface ReadSql {
  lists: Array<{ rows: string; ids: string }>;
  getPlant: string;
}

export function readSql(db: AppDatabase): ReadSql {
  const lists = LIST_SHAPES.map((shape) => ({
    rows: positional(listPlantsQuery(db, shape), listParamNames(shape)),
    ids: positional(listPlantsQuery(db, { ...shape, idsOnly: true }), listParamNames(shape)),
  }));
  const getPlant = db
    .select({ name: plants.name, tag: plants.tag })
    .from(plants)
    .where(and(eq(plants.ownerId, sql.placeholder("ownerId")), eq(plants.id, sql.placeholder("id"))));
  return { lists, getPlant: positional(getPlant, ["ownerId", "id"]) };
}
