// What both engines' plant and change stores share.
import { getTableColumns, type Table } from "drizzle-orm";
import type { Change, ChangePage } from "../core/changes";
import type { Plant } from "../core/plant";
import type { PlantChange, PlantFilter, PlantPage } from "../core/stores";
import { nextTurn } from "../core/timers";

/** How many ids one step of the walk to a long page's last plant reads (an index-only scan). */
const BOUNDARY_STEP = 10_000;

/** What an engine's plant store is given besides its connection. */
export interface PlantStoreOptions {
  clock: () => number;
  /** Told after each write that may have logged a change, once committed (PostgreSQL stamps its seq then). */
  logged: () => void;
  listChunkSize?: number;
}

/** The four filter shapes, each its own statement: with or without a cursor, with or without a tag. */
export const SHAPES: PlantFilter[] = [{}, { tag: "" }, { after: 0n }, { after: 0n, tag: "" }];
export const shapeOf = ({ after, tag }: PlantFilter) => (after === undefined ? 0 : 2) + (tag === undefined ? 0 : 1);

/**
 * A plant's columns as an engine's Drizzle table declares them (the owner aside), each read under its
 * field's name; VALUE_FIELDS are those an owner sets, in the order updateParams binds them.
 */
export function plantFields(plants: Table) {
  const PLANT_FIELDS = Object.entries(getTableColumns(plants))
    .filter(([field]) => field !== "ownerId")
    .map(([field, c]) => ({ field, column: c.name, int64: c.dataType === "bigint", type: c.getSQLType() }));
  return { PLANT_FIELDS, VALUE_FIELDS: PLANT_FIELDS.filter(({ field }) => field !== "id") };
}

/** An engine's VALUE_FIELDS: every field of a plant but the id. */
type Fields = ReadonlyArray<{ field: string }>;
const fieldOf = (plant: PlantChange, field: string) => plant[field as keyof Plant];

/** `plant`'s values of `fields`, null for one it has not: what a conditional write compares. */
export const valuesOf = (plant: Plant, fields: Fields) => fields.map(({ field }) => fieldOf(plant, field) ?? null);

/**
 * After an update that wrote nothing: `current` when the change leaves it as it is (and it is still
 * `expected`), an update that succeeds without a change; undefined for a missing or changed plant.
 */
export function unchanged(current: Plant | undefined, change: PlantChange, fields: Fields, expected?: Plant) {
  if (!current) return undefined;
  const equal = (values: PlantChange, field: string) =>
    (fieldOf(values, field) ?? null) === (fieldOf(current, field) ?? null);
  const same = fields.every(
    ({ field }) =>
      (fieldOf(change, field) === undefined || equal(change, field)) && (!expected || equal(expected, field)),
  );
  return same ? current : undefined;
}

/** (owner, id, then per field: whether it changes, its value), then for a conditional update the expected values. */
export function updateParams(ownerId: number, id: bigint, change: PlantChange, fields: Fields, expected?: Plant) {
  const changes = fields.flatMap(({ field }) => [fieldOf(change, field) !== undefined, fieldOf(change, field) ?? null]);
  return [ownerId, id, ...changes, ...(expected ? valuesOf(expected, fields) : [])];
}

/** A page of `rows` (count + 1 read, to tell `more`), trimmed in place to none past `upTo`. */
export function toPage<Row>(
  rows: Row[],
  count: number,
  upTo: bigint | undefined,
  withIds: boolean | undefined,
  idOf: (row: Row) => bigint,
  toPlant: (row: Row) => Plant,
): PlantPage {
  let more = rows.length > count;
  if (more) rows.pop();
  while (upTo !== undefined && rows.length > 0 && idOf(rows.at(-1) as Row) > upTo) {
    rows.pop();
    more = false;
  }
  // Before toPlant, which may drop the ids.
  const last = rows.at(-1);
  const lastId = last === undefined ? undefined : idOf(last);
  const ids = withIds ? rows.map(idOf) : undefined;
  return { plants: rows.map(toPlant), ids, lastId, more };
}

/** PlantStore.nthId: walks `ids` (up to `limit` after the filter's cursor) in steps, yielding between them. */
export async function nthId(
  filter: PlantFilter,
  count: number,
  ids: (filter: PlantFilter, limit: number) => Promise<bigint[]> | bigint[],
) {
  if (count <= 0) return undefined;
  let after = filter.after;
  let left = count;
  for (;;) {
    const step = Math.min(left, BOUNDARY_STEP);
    const found = await ids({ ...filter, after }, step + 1);
    if (found.length < step) return undefined;
    left -= step;
    const last = found[step - 1] as bigint;
    if (left === 0) return { id: last, more: found.length > step };
    after = last;
    await nextTurn();
  }
}

export type ChangeRow = Record<string, unknown> & { type: Change["type"] };

/** A log row as the feed shows it, whichever driver read it: its plant's fields, none null. */
function toChange(row: ChangeRow, fields: Fields): Change {
  const plant: Record<string, unknown> = {};
  for (const { field } of fields) if (row[field] !== null) plant[field] = row[field];
  const number = (value: unknown) => Number(value as number | bigint);
  return {
    seq: number(row.seq),
    ownerId: number(row.ownerId),
    type: row.type,
    at: number(row.at),
    id: BigInt(row.id as bigint | string),
    plant: plant as unknown as Plant,
  };
}

/** A page of the log from `count + 1` rows (the extra one tells `more`) and the owner's marks. */
export function changePage(
  rows: ChangeRow[],
  count: number,
  mark: { newest: number; prunedThrough: number },
  fields: Fields,
): ChangePage {
  const more = rows.length > count;
  if (more) rows.pop();
  const changes = rows.map((row) => toChange(row, fields));
  return { changes, more, newest: Math.max(mark.newest, changes.at(-1)?.seq ?? 0), prunedThrough: mark.prunedThrough };
}

export const changesOf = (rows: ChangeRow[], fields: Fields) => rows.map((row) => toChange(row, fields));
