import type { Database, SQLQueryBindings } from "bun:sqlite";
import { type KeptRow, type KeyedCreate, type KeyedOutcome, keptAnswer } from "../../core/idempotency";
import type { NewPlant, Plant } from "../../core/plant";
import {
  LIST_CHUNK_SIZE,
  type PlantChange,
  type PlantFilter,
  type PlantPage,
  type PlantStore,
  trimToPage,
} from "../../core/stores";
import { IDEMPOTENCY_SQL, listSql, PLANT_FIELDS, PLANT_SQL } from "./queries";
import type { Writer } from "./writer";

/** How many ids one step of the walk to a long page's last plant reads (an index-only scan). */
const BOUNDARY_STEP = 10_000;

type Row = Record<string, unknown> & { id?: bigint };

/**
 * A row as its owner sees it: no id, nothing null. The driver's row object serves as the Plant
 * (JSON leaves out what is undefined).
 */
function toPlant(row: Row): Plant {
  row.id = undefined;
  for (const key in row) if (row[key] === null) row[key] = undefined;
  return row as unknown as Plant;
}

/** A new plant's values, in PLANT_FIELDS' order. */
const plantValues = (plant: NewPlant): SQLQueryBindings[] =>
  PLANT_FIELDS.map(({ field }) =>
    field === "id" ? BigInt(plant.id) : ((plant as unknown as Record<string, SQLQueryBindings>)[field] ?? null),
  );

/** An update's flags and values, as `PLANT_SQL.update` binds them from ?3. */
const changeParams = ({ name, tag }: PlantChange): SQLQueryBindings[] => [
  name === undefined ? 0 : 1,
  name ?? null,
  tag === undefined ? 0 : 1,
  tag ?? null,
];

/** Where a filter's statements sit: with or without a cursor, with or without a tag. */
const shapeOf = ({ after, tag }: PlantFilter) => (after === undefined ? 0 : 2) + (tag === undefined ? 0 : 1);
const SHAPES: PlantFilter[] = [{}, { tag: "" }, { after: 0n }, { after: 0n, tag: "" }];

/**
 * An owner's plants on SQLite. Reads run at once on the caller's thread; writes go through group commit,
 * so they resolve only once durable. Ids are read as bigints (`safeIntegers`): the driver would
 * round integers past 2^53, and a rounded cursor would skip or repeat plants.
 */
export function createSqlitePlantStore(sqlite: Database, writes: Writer, listChunkSize = LIST_CHUNK_SIZE): PlantStore {
  const lists = SHAPES.map((shape) => ({
    rows: sqlite.prepare<Row, SQLQueryBindings[]>(listSql(shape, false)).safeIntegers(true),
    ids: sqlite.prepare<{ id: bigint }, SQLQueryBindings[]>(listSql(shape, true)).safeIntegers(true),
  }));
  const get = sqlite.prepare<Row, [number, bigint]>(PLANT_SQL.get).safeIntegers(true);

  const statementsFor = (filter: PlantFilter) => lists[shapeOf(filter)] as (typeof lists)[0];
  const params = (ownerId: number, { tag, after }: PlantFilter, limit: number) => [
    ownerId,
    tag ?? null,
    after ?? null,
    limit,
  ];

  return {
    listChunkSize,

    async createPlant(ownerId: number, plant: NewPlant) {
      const row = await writes.run<Row | null>({
        sql: PLANT_SQL.insert,
        mode: "get",
        params: [ownerId, ...plantValues(plant)],
        exact: true,
      });
      return row ? toPlant(row) : undefined;
    },

    /** One process owns the file, and the route lets one request per key in at a time: never busy. */
    async createPlantOnce(ownerId: number, plant: NewPlant, keyed: KeyedCreate): Promise<KeyedOutcome> {
      const { key, created, taken } = keyed;
      const row = await writes.run<KeptRow & { fresh: number }>({
        steps: [
          { sql: IDEMPOTENCY_SQL.dropExpired, mode: "run", params: [ownerId, key, keyed.expiredAt] },
          { sql: IDEMPOTENCY_SQL.insertPlant, mode: "run", params: [ownerId, key, ...plantValues(plant)] },
          {
            sql: IDEMPOTENCY_SQL.record,
            mode: "run",
            params: [ownerId, key, keyed.requestHash, created.status, created.body, created.etag ?? null].concat([
              taken.status,
              taken.body,
              taken.etag ?? null,
              keyed.at,
            ]),
          },
          { sql: IDEMPOTENCY_SQL.read, mode: "get", params: [ownerId, key] },
        ],
      });
      const answer = keptAnswer(row);
      return row.fresh ? { kind: "fresh", answer } : { kind: "kept", answer, requestHash: row.requestHash };
    },

    async pruneIdempotencyKeys(before: number, count: number) {
      const gone = await writes.run<unknown[]>(
        { sql: IDEMPOTENCY_SQL.prune, mode: "all", params: [before, count] },
        { bookkeeping: true },
      );
      return gone.length;
    },

    async listPage(
      ownerId: number,
      filter: PlantFilter,
      count: number,
      upTo?: bigint,
      withIds?: boolean,
    ): Promise<PlantPage> {
      const rows = statementsFor(filter).rows.all(...params(ownerId, filter, count + 1));
      const { more, lastId } = trimToPage(rows, count, upTo, (row) => row.id as bigint);
      if (!withIds) return { plants: rows.map(toPlant), lastId, more };
      const ids = rows.map((row) => row.id as bigint); // before toPlant drops them
      return { plants: rows.map(toPlant), ids, lastId, more };
    },

    /** Walks ids in steps from the index, with a turn of the event loop between steps. */
    async nthId(ownerId: number, filter: PlantFilter, count: number) {
      if (count <= 0) return undefined;
      let after = filter.after;
      let left = count;
      for (;;) {
        const step = Math.min(left, BOUNDARY_STEP);
        const ids = statementsFor({ ...filter, after }).ids.all(...params(ownerId, { ...filter, after }, step + 1));
        if (ids.length < step) return undefined;
        left -= step;
        const last = (ids[step - 1] as { id: bigint }).id;
        if (left === 0) return { id: last, more: ids.length > step };
        after = last;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    },

    async getPlant(ownerId: number, id: bigint): Promise<Plant | undefined> {
      const row = get.get(ownerId, id);
      return row ? toPlant(row) : undefined;
    },

    async updatePlant(ownerId: number, id: bigint, change: PlantChange, expected?: Plant) {
      const params: SQLQueryBindings[] = [ownerId, id, ...changeParams(change)];
      if (expected) params.push(expected.name, expected.tag ?? null);
      const sql = expected ? PLANT_SQL.updateIf : PLANT_SQL.update;
      const row = await writes.run<Row | null>({ sql, mode: "get", params, exact: true });
      return row ? toPlant(row) : undefined;
    },

    async deletePlant(ownerId: number, id: bigint, expected?: Plant) {
      const write = expected
        ? { sql: PLANT_SQL.deleteIf, params: [ownerId, id, expected.name, expected.tag ?? null] }
        : { sql: PLANT_SQL.delete, params: [ownerId, id] };
      return Boolean(await writes.run({ ...write, mode: "get", exact: true }));
    },
  };
}
