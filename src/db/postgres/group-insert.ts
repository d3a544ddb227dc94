import type { SQL } from "bun";
import { postgresState } from "../../core/failures";
import type { NewPlant } from "../../core/plant";
import { createGroups, type GroupOptions, type Waiting } from "./groups";
import { PLANT_FIELDS, PLANT_SQL } from "./queries";

/** A stored plant's row: its owner and its fields, int64 ones as decimal text. */
export type PlantRow = Record<string, unknown>;
interface Create {
  ownerId: number;
  plant: NewPlant;
}
type Pending = Waiting<Create, PlantRow | undefined>;

/**
 * A create as a JSON object keyed by column. An int64 goes as its decimal text, which PostgreSQL
 * reads exactly: JSON.stringify cannot hold a bigint, and a JS number would round past 2^53.
 */
function rowJson({ ownerId, plant }: Create): string {
  const fields = PLANT_FIELDS.map(({ field, column, int64 }) => {
    const value = (plant as unknown as Record<string, unknown>)[field] ?? null;
    return `"${column}":${value !== null && int64 ? `"${BigInt(value as bigint)}"` : JSON.stringify(value)}`;
  });
  return `{"owner_id":${ownerId},${fields.join(",")}}`;
}

const keyOf = (ownerId: unknown, id: unknown) => `${ownerId}:${id}`;

/** A data exception or integrity violation: a fault of one row, which must not fail its neighbours. */
const rowFault = (error: unknown) => /^2[23]/.test(postgresState(error) ?? "");

/**
 * Creates that arrive together go to PostgreSQL as one INSERT (groups.ts): one round trip, one
 * transaction and one WAL flush for all of them (docs/decisions/0002).
 *
 * Each create gets its own answer once the statement has committed: the stored row, or
 * undefined when the owner already had that id. A repeat of an (owner, id) within one group is
 * undefined: the first of them is the one inserted, or the id was already taken. When the
 * group's statement fails on one row's data, its creates are run again one by one, so only that
 * create fails; any other failure (the server gone, a timeout) is every create's answer.
 */
export function createGroupInsert(client: SQL, options: GroupOptions = {}) {
  /** The rows that went in, by key. */
  async function insertRows(creates: Create[]): Promise<Map<string, PlantRow>> {
    const rows = (await client.unsafe(PLANT_SQL.insertGroup, [`[${creates.map(rowJson).join(",")}]`])) as PlantRow[];
    return new Map(rows.map((row) => [keyOf(row.ownerId, row.id), row]));
  }

  async function runGroup(group: Pending[]): Promise<void> {
    const keys = group.map(({ item }) => keyOf(item.ownerId, BigInt(item.plant.id)));
    const firsts = new Map<string, Pending>();
    group.forEach((waiting, i) => {
      if (!firsts.has(keys[i] as string)) firsts.set(keys[i] as string, waiting);
    });
    let inserted: Map<string, PlantRow>;
    try {
      inserted = await insertRows([...firsts.values()].map((waiting) => waiting.item));
    } catch (error) {
      if (group.length > 1 && rowFault(error)) return runOneByOne(group);
      throw error;
    }
    group.forEach((waiting, i) => {
      const key = keys[i] as string;
      waiting.resolve(firsts.get(key) === waiting ? inserted.get(key) : undefined);
    });
  }

  async function runOneByOne(group: Pending[]): Promise<void> {
    for (const waiting of group) {
      try {
        const [row] = (await insertRows([waiting.item])).values();
        waiting.resolve(row);
      } catch (error) {
        waiting.reject(error);
      }
    }
  }

  const groups = createGroups(runGroup, options);
  return {
    /** The stored row once committed; undefined when the owner already has this id. */
    insert: (ownerId: number, plant: NewPlant): Promise<PlantRow | undefined> => groups.add({ ownerId, plant }),
  };
}
