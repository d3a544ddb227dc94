import type { SQL } from "bun";
import { postgresState } from "../../core/failures";
import { type KeptRow, type KeyedCreate, type KeyedOutcome, keptAnswer } from "../../core/idempotency";
import type { NewPlant } from "../../core/plant";
import { createGroups, type GroupOptions, type Waiting } from "./groups";
import { IDEMPOTENCY_SQL, PLANT_FIELDS, PLANT_SQL } from "./queries";

/** A stored plant's row: its owner and its fields, int64 ones as decimal text. */
export type PlantRow = Record<string, unknown>;
interface Create {
  ownerId: number;
  plant: NewPlant;
  keyed?: KeyedCreate;
}
interface Removal {
  ownerId: number;
  removes: bigint;
  keyed?: undefined;
}
type Write = Create | Removal;
/** A keyed create's answer from the group; `expired`: a record past its time holds the key. */
export type KeyedResult = KeyedOutcome | { kind: "expired" };
type Pending = Waiting<Write, unknown>;
type KeyedRow = PlantRow & KeptRow & { fresh: boolean; expired: boolean | null };

/** A create as JSON keyed by column; an int64 goes as decimal text, as a JS number would round past 2^53. */
function rowJson({ ownerId, plant, keyed }: Create): string {
  const fields = PLANT_FIELDS.map(({ field, column, int64 }) => {
    const value = (plant as unknown as Record<string, unknown>)[field] ?? null;
    return `"${column}":${value !== null && int64 ? `"${BigInt(value as bigint)}"` : JSON.stringify(value)}`;
  });
  if (!keyed) return `{"owner_id":${ownerId},${fields.join(",")}}`;
  const { key, requestHash: hash, at, expiredAt: expired_at, created, taken } = keyed;
  const answers = { cs: created.status, cb: created.body, ce: created.etag, ts: taken.status, tb: taken.body };
  const extra = JSON.stringify({ key, hash, at, expired_at, ...answers }).slice(1, -1);
  return `{"owner_id":${ownerId},${fields.join(",")},${extra}}`;
}

const keyOf = (ownerId: unknown, id: unknown) => `${ownerId}:${id}`;
const isCreate = (write: Write): write is Create => "plant" in write;
const keyOfWrite = (write: Write) => keyOf(write.ownerId, isCreate(write) ? BigInt(write.plant.id) : write.removes);

/** A data exception or integrity violation: a fault of one row, which must not fail its neighbours. */
const rowFault = (error: unknown) => /^2[23]/.test(postgresState(error) ?? "");
const UNIQUE_VIOLATION = "23505";

function keyedResult(row: KeyedRow | undefined): KeyedResult {
  if (!row || row.status === null) throw new Error("a keyed create came back without its record");
  if (row.fresh) return { kind: "fresh", answer: keptAnswer(row) };
  if (row.expired) return { kind: "expired" };
  return { kind: "kept", answer: keptAnswer(row), requestHash: row.requestHash };
}

/** Creates and deletes arriving together as one statement; a group failing on one row's data goes again row by row. */
export function createWriteGroups(client: SQL, clock: () => number, options: GroupOptions = {}) {
  async function writeRows(writes: Write[]): Promise<unknown[]> {
    const creates = writes.filter(isCreate);
    // A keyed create's statement has no deletes: send() sends them beside it.
    if (creates.some((create) => create.keyed)) {
      const json = `[${creates.map(rowJson).join(",")}]`;
      const rows = (await client.unsafe(IDEMPOTENCY_SQL.insertGroup, [json, clock()])) as KeyedRow[];
      return creates.map((create, i) =>
        create.keyed ? keyedResult(rows[i]) : rows[i]?.id == null ? undefined : rows[i],
      );
    }
    const removals = writes.flatMap((write) =>
      isCreate(write) ? [] : `{"o":${write.ownerId},"i":"${write.removes}"}`,
    );
    const params = [`[${creates.map(rowJson).join(",")}]`, clock(), `[${removals.join(",")}]`];
    const rows = (await client.unsafe(PLANT_SQL.writeGroup, params)) as Array<PlantRow & { gone: boolean }>;
    const inserted = new Map<string, PlantRow>();
    const gone = new Set<string>();
    for (const row of rows) {
      if (row.gone) gone.add(keyOf(row.ownerId, row.id));
      else inserted.set(keyOf(row.ownerId, row.id), row);
    }
    // A plant the group deleted answers its first delete only.
    return writes.map((write) => (isCreate(write) ? inserted.get(keyOfWrite(write)) : gone.delete(keyOfWrite(write))));
  }

  async function runGroup(group: Pending[]): Promise<void> {
    const firsts = new Map<string, Pending>();
    const sent: Pending[] = [];
    const after: Pending[] = [];
    for (const waiting of group) {
      const { item } = waiting;
      const key = keyOfWrite(item);
      const first = firsts.get(key);
      if (!first) {
        firsts.set(key, waiting);
        sent.push(waiting);
        continue;
      }
      const creates = [first.item, item].filter(isCreate);
      // Deletes again: the statement deletes the plant once. A create and a delete: they go in turn.
      if (creates.length === 0) sent.push(waiting);
      else if (creates.length === 2 && !first.item.keyed && !item.keyed) waiting.resolve(undefined);
      else after.push(waiting);
    }
    await send(sent);
    // Added once this statement is over, so they are written after it; if it failed, they failed with it.
    for (const waiting of after) groups.add(waiting.item).then(waiting.resolve, waiting.reject);
  }

  async function send(sent: Pending[]): Promise<void> {
    const removals = sent.filter((waiting) => !isCreate(waiting.item));
    if (removals.length > 0 && sent.some((waiting) => waiting.item.keyed)) {
      // The kept answers' statement takes creates only: the deletes go beside it, each half answered on its own.
      const halves = [sent.filter((waiting) => isCreate(waiting.item)), removals];
      for (const half of await Promise.allSettled(halves.map(send))) if (half.status === "rejected") throw half.reason;
      return;
    }
    let results: unknown[];
    try {
      results = await writeRows(sent.map((waiting) => waiting.item));
    } catch (error) {
      if (sent.length > 1 && rowFault(error)) return runOneByOne(sent);
      if (sent.length === 1 && sent[0]?.item.keyed && postgresState(error) === UNIQUE_VIOLATION)
        return sent[0].resolve({ kind: "busy" });
      throw error;
    }
    for (const [i, waiting] of sent.entries()) waiting.resolve(results[i]);
  }

  async function runOneByOne(group: Pending[]): Promise<void> {
    for (const waiting of group) {
      try {
        const [result] = await writeRows([waiting.item]);
        waiting.resolve(result);
      } catch (error) {
        // Another session holds the key still: its request is being processed.
        if (waiting.item.keyed && postgresState(error) === UNIQUE_VIOLATION) waiting.resolve({ kind: "busy" });
        else waiting.reject(error);
      }
    }
  }

  const groups = createGroups(runGroup, options);
  return {
    /** The stored row once committed; undefined when the owner already has this id. */
    insert: (ownerId: number, plant: NewPlant) => groups.add({ ownerId, plant }) as Promise<PlantRow | undefined>,
    /** A keyed create's outcome once committed (core/idempotency.ts). */
    insertOnce: (ownerId: number, plant: NewPlant, keyed: KeyedCreate) =>
      groups.add({ ownerId, plant, keyed }) as Promise<KeyedResult>,
    /** Whether the plant was there; one the group did not delete (gone, or locked) is asked again alone. */
    async remove(ownerId: number, id: bigint): Promise<boolean> {
      if (await groups.add({ ownerId, removes: id })) return true;
      return (await client.unsafe(PLANT_SQL.deleteOne, [ownerId, id, clock()])).length > 0;
    },
  };
}
