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
/** A keyed create's answer from the group; `expired`: a record past its time holds the key. */
export type KeyedResult = KeyedOutcome | { kind: "expired" };
type Pending = Waiting<Create, unknown>;
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

/** A data exception or integrity violation: a fault of one row, which must not fail its neighbours. */
const rowFault = (error: unknown) => /^2[23]/.test(postgresState(error) ?? "");
const UNIQUE_VIOLATION = "23505";

function keyedResult(row: KeyedRow | undefined): KeyedResult {
  if (!row || row.status === null) throw new Error("a keyed create came back without its record");
  if (row.fresh) return { kind: "fresh", answer: keptAnswer(row) };
  if (row.expired) return { kind: "expired" };
  return { kind: "kept", answer: keptAnswer(row), requestHash: row.requestHash };
}

/**
 * Creates that arrive together go as one INSERT; a repeated (owner, id) gets undefined, as in turn, or waits
 * for the next group if keyed. A group failing on one row's data runs again one by one, so only that one fails.
 */
export function createGroupInsert(client: SQL, clock: () => number, options: GroupOptions = {}) {
  async function insertRows(creates: Create[]): Promise<unknown[]> {
    const json = `[${creates.map(rowJson).join(",")}]`;
    if (creates.some((create) => create.keyed)) {
      const rows = (await client.unsafe(IDEMPOTENCY_SQL.insertGroup, [json, clock()])) as KeyedRow[];
      return creates.map((create, i) =>
        create.keyed ? keyedResult(rows[i]) : rows[i]?.id == null ? undefined : rows[i],
      );
    }
    const rows = (await client.unsafe(PLANT_SQL.insertGroup, [json, clock()])) as PlantRow[];
    const inserted = new Map(rows.map((row) => [keyOf(row.ownerId, row.id), row]));
    return creates.map((create) => inserted.get(keyOf(create.ownerId, BigInt(create.plant.id))));
  }

  async function runGroup(group: Pending[]): Promise<void> {
    const firsts = new Map<string, Pending>();
    const sent: Pending[] = [];
    for (const waiting of group) {
      const key = keyOf(waiting.item.ownerId, BigInt(waiting.item.plant.id));
      const first = firsts.get(key);
      if (!first) {
        firsts.set(key, waiting);
        sent.push(waiting);
      } else if (first.item.keyed || waiting.item.keyed) groups.add(waiting.item).then(waiting.resolve, waiting.reject);
      else waiting.resolve(undefined);
    }
    let results: unknown[];
    try {
      results = await insertRows(sent.map((waiting) => waiting.item));
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
        const [result] = await insertRows([waiting.item]);
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
  };
}
