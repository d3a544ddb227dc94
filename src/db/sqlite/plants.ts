import type { Database, SQLQueryBindings } from "bun:sqlite";
import { type KeptAnswer, type KeptRow, type KeyedCreate, type KeyedOutcome, keptAnswer } from "../../core/idempotency";
import type { NewPlant, Plant } from "../../core/plant";
import { LIST_CHUNK_SIZE, type PlantFilter, type PlantStore } from "../../core/stores";
import { nthId, type PlantStoreOptions, SHAPES, shapeOf, toPage, unchanged, updateParams, valuesOf } from "../plants";
import { CHANGE_SQL, IDEMPOTENCY_SQL, listSql, PLANT_FIELDS, PLANT_SQL, VALUE_FIELDS } from "./queries";
import { countRows, type Write, type Writer } from "./writer";

type Row = Record<string, unknown> & { id?: bigint };

/** A row as its owner sees it: no id, nothing null (the driver's row object is reused). */
function toPlant(row: Row): Plant {
  row.id = undefined;
  for (const key in row) if (row[key] === null) row[key] = undefined;
  return row as unknown as Plant;
}

/** A write whose row comes back with the plant's id exact. */
const plantWrite = (sql: string, params: SQLQueryBindings[]): Write => ({ sql, mode: "get", params, exact: true });

/** A kept answer as IDEMPOTENCY_SQL.record binds it. */
const answerValues = ({ status, body, etag }: KeptAnswer) => [status, body, etag ?? null];

/** A new plant's values, in PLANT_FIELDS' order. */
const plantValues = (plant: NewPlant): SQLQueryBindings[] =>
  PLANT_FIELDS.map(({ field }) =>
    field === "id" ? BigInt(plant.id) : ((plant as unknown as Record<string, SQLQueryBindings>)[field] ?? null),
  );

/**
 * Ids are read as bigints (`safeIntegers`): the driver would round them. Every write that changes
 * a plant logs the change in its own savepoint (CHANGE_SQL).
 */
export function createSqlitePlantStore(
  sqlite: Database,
  writes: Writer,
  { clock, logged, listChunkSize = LIST_CHUNK_SIZE }: PlantStoreOptions,
): PlantStore {
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
  const log = (sql: string, ownerId: number, id: bigint, type: string, more: SQLQueryBindings[] = []): Write => ({
    sql,
    mode: "run",
    params: [ownerId, id, type, clock(), ...more],
  });
  /** The write, once committed, then the feed told. */
  async function logging<T>(steps: Write[], answer?: number): Promise<T> {
    const result = await writes.run<T>({ steps, answer });
    logged();
    return result;
  }

  return {
    listChunkSize,
    async createPlant(ownerId: number, plant: NewPlant) {
      const insert = plantWrite(PLANT_SQL.insert, [ownerId, ...plantValues(plant)]);
      const created = log(CHANGE_SQL.logAfter, ownerId, BigInt(plant.id), "plant.created");
      const row = await logging<Row | null>([insert, created], 0);
      return row ? toPlant(row) : undefined;
    },

    /** Never busy: one process owns the file, and the route lets one request per key in at a time. */
    async createPlantOnce(ownerId: number, plant: NewPlant, keyed: KeyedCreate): Promise<KeyedOutcome> {
      const { key, created, taken } = keyed;
      const record = [ownerId, key, keyed.requestHash, ...answerValues(created), ...answerValues(taken), keyed.at];
      const row = await logging<KeptRow & { fresh: number }>([
        { sql: IDEMPOTENCY_SQL.dropExpired, mode: "run", params: [ownerId, key, keyed.expiredAt] },
        { sql: IDEMPOTENCY_SQL.insertPlant, mode: "run", params: [ownerId, key, ...plantValues(plant)] },
        log(CHANGE_SQL.logAfter, ownerId, BigInt(plant.id), "plant.created"),
        { sql: IDEMPOTENCY_SQL.record, mode: "run", params: record },
        { sql: IDEMPOTENCY_SQL.read, mode: "get", params: [ownerId, key] },
      ]);
      const answer = keptAnswer(row);
      return row.fresh ? { kind: "fresh", answer } : { kind: "kept", answer, requestHash: row.requestHash };
    },
    pruneIdempotencyKeys: (before, count) => countRows(writes, IDEMPOTENCY_SQL.prune, [before, count]),
    listPage(ownerId, filter, count, upTo, withIds) {
      writes.snapshot();
      const rows = statementsFor(filter).rows.all(...params(ownerId, filter, count + 1));
      return toPage(rows, count, upTo, withIds, (row) => row.id as bigint, toPlant);
    },

    nthId: (ownerId, filter, count) =>
      nthId(filter, count, (at, limit) =>
        statementsFor(at)
          .ids.all(...params(ownerId, at, limit))
          .map((row) => row.id),
      ),

    async getPlant(ownerId: number, id: bigint): Promise<Plant | undefined> {
      writes.snapshot();
      const row = get.get(ownerId, id);
      return row ? toPlant(row) : undefined;
    },

    async updatePlant(ownerId, id, change, expected) {
      const params = updateParams(ownerId, id, change, VALUE_FIELDS, expected);
      const update = plantWrite(expected ? PLANT_SQL.updateIf : PLANT_SQL.update, params);
      const row = await logging<Row | null>([update, log(CHANGE_SQL.logAfter, ownerId, id, "plant.updated")], 0);
      if (row) return toPlant(row);
      const current = get.get(ownerId, id);
      return unchanged(current ? toPlant(current) : undefined, change, VALUE_FIELDS, expected);
    },

    async deletePlant(ownerId: number, id: bigint, expected?: Plant) {
      const was = expected ? valuesOf(expected, VALUE_FIELDS) : [];
      const remove = plantWrite(expected ? PLANT_SQL.deleteIf : PLANT_SQL.delete, [ownerId, id, ...was]);
      const deleted = log(CHANGE_SQL.logBefore(expected !== undefined), ownerId, id, "plant.deleted", was);
      return Boolean(await logging([deleted, remove], 1));
    },
  };
}
