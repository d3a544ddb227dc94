import type { Database } from "bun:sqlite";
import type { NewPlant, Plant } from "../../core/plant";
import { LIST_CHUNK_SIZE, type PlantFilter, type PlantPage, type PlantStore, trimToPage } from "../../core/stores";
import { shapeOf } from "../list-shapes";
import { READ_SQL } from "./built-sql";
import type { Writer } from "./writer";

/** How many ids one step of the walk to a long page's last plant reads (an index-only scan). */
const BOUNDARY_STEP = 10_000;

function toPlant(row: { name: string; tag: string | null }): Plant {
  return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };
}

type Row = { id: bigint | undefined; name: string; tag: string | null | undefined };

/**
 * Every statement is prepared once and always scoped to one owner. Writes go through group
 * commit, so they resolve only once durable.
 */
export function createSqlitePlantStore(sqlite: Database, writes: Writer, listChunkSize = LIST_CHUNK_SIZE): PlantStore {
  // The driver runs the list SQL Drizzle wrote (Drizzle's prepared query maps its
  // placeholders on every call, about 5 % of a list request, and the list is the hot path).
  // Ids are read as bigints: the driver rounds integers past 2^53 to the nearest double, and a
  // rounded cursor would skip or repeat plants.
  const statements = READ_SQL.lists.map(({ rows, ids }) => ({
    rows: sqlite.prepare(rows).safeIntegers(true),
    ids: sqlite.prepare(ids).safeIntegers(true),
  }));
  /** The statements for a filter, and their parameters in the order the SQL binds them. */
  function bound(ownerId: number, { after, tag }: PlantFilter) {
    const statement = statements[shapeOf({ after, tag })] as (typeof statements)[0];
    const params: Array<number | bigint | string> = [ownerId];
    if (tag !== undefined) params.push(tag);
    if (after !== undefined) params.push(after);
    return { statement, params };
  }

  const findOne = sqlite.prepare<{ name: string; tag: string | null }, [number, bigint]>(READ_SQL.getPlant);

  return {
    /** The stored plant, or undefined when the owner already has one with this id. */
    async createPlant(ownerId: number, plant: NewPlant): Promise<Plant | undefined> {
      const row = await writes.run("insertPlant", [ownerId, BigInt(plant.id), plant.name, plant.tag ?? null]);
      return row ? toPlant(row) : undefined;
    },

    listChunkSize,

    /**
     * Up to `count` of the owner's plants that match, by id, and whether more match past them.
     * One statement run to its end: no read stays open between the steps of a long list, so a
     * slow reader never holds back the WAL. `upTo` drops plants past that id.
     */
    listPage(ownerId: number, filter: PlantFilter, count: number, upTo?: bigint): PlantPage {
      const { statement, params } = bound(ownerId, filter);
      const rows = statement.rows.all(...params, count + 1) as Row[];
      const { more, lastId } = trimToPage(rows, count, upTo, (row) => row.id as bigint);
      // The driver's row objects serve as Plants: JSON leaves out what is undefined.
      for (const row of rows) {
        row.id = undefined;
        if (row.tag === null) row.tag = undefined;
      }
      return { plants: rows as Plant[], lastId, more };
    },

    /**
     * The id of the `count`-th matching plant, and whether more match past it, found by
     * walking ids in steps from the index with a turn of the event loop between steps; undefined
     * when fewer than `count` match. It ends a long page (see list-answer.ts).
     */
    async nthId(
      ownerId: number,
      filter: PlantFilter,
      count: number,
    ): Promise<{ id: bigint; more: boolean } | undefined> {
      if (count <= 0) return undefined;
      let after = filter.after;
      let left = count;
      for (;;) {
        const step = Math.min(left, BOUNDARY_STEP);
        const { statement, params } = bound(ownerId, { ...filter, after });
        const ids = statement.ids.values(...params, step + 1) as Array<[bigint]>;
        if (ids.length < step) return undefined;
        left -= step;
        const last = (ids[step - 1] as [bigint])[0];
        if (left === 0) return { id: last, more: ids.length > step };
        after = last;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    },

    /** One of the owner's plants, or undefined when they have none with this id. */
    getPlant(ownerId: number, id: bigint): Plant | undefined {
      const row = findOne.get(ownerId, id);
      return row ? toPlant(row) : undefined;
    },

    /** True when the owner had the plant and it is gone now. */
    async deletePlant(ownerId: number, id: bigint): Promise<boolean> {
      return Boolean(await writes.run("deletePlant", [ownerId, id]));
    },
  };
}
