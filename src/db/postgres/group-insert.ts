import type { SQL } from "bun";
import { postgresState } from "../../core/failures";
import { createGroups, type GroupOptions, type Waiting } from "./groups";

interface Row {
  ownerId: number;
  id: bigint;
  name: string;
  tag: string | null;
}
type Pending = Waiting<Row, boolean>;

/** The group's rows in arrival order ("k"); a taken (owner, id) is skipped, as the single-row insert's rule. */
const INSERT_GROUP = `
  INSERT INTO plants (owner_id, id, name, tag)
  SELECT r.o, r.i, r.n, r.t FROM json_to_recordset($1::text::json) AS r(k integer, o integer, i bigint, n text, t text)
  ORDER BY r.k
  ON CONFLICT DO NOTHING
  RETURNING owner_id::text || ':' || id::text`;

/** A data exception or integrity violation: a fault of one row, which must not fail its neighbours. */
const rowFault = (error: unknown) => /^2[23]/.test(postgresState(error) ?? "");

/**
 * Creates that arrive together go to PostgreSQL as one INSERT (groups.ts): one round trip, one
 * transaction and one WAL flush for all of them, where each alone costs all three.
 * `bun bench/pg-group-insert.ts` (64 writers, a
 * durable cluster): 13,500–16,500 creates/s one statement each, 40,800–41,400 grouped (3.0×).
 *
 * Each create still gets its own answer, and only once its statement has committed: true when
 * its row went in, false when the owner already had that id (ON CONFLICT DO NOTHING, the
 * single-row statement's rule). A repeat of an (owner, id) within one group is false: the first
 * of them is the one inserted, or the id was already taken. Rows go in in arrival order, so the
 * webhook outbox (filled by a trigger per row) keeps that order. When the group's statement fails
 * on one row's data, its creates are run again one by one, so only that create fails; any other
 * failure (the server gone, a timeout) is every create's answer.
 */
export function createGroupInsert(client: SQL, options: GroupOptions = {}) {
  /** The keys of the rows that went in. */
  async function insertRows(rows: Row[]): Promise<Set<string>> {
    // Written here rather than by JSON.stringify, which cannot hold a bigint; the id goes as its
    // decimal text, which PostgreSQL reads into bigint exactly. Sent as text: given a string for
    // a json parameter, the driver would encode it once more, as a JSON string.
    const json = `[${rows
      .map(
        (row, k) =>
          `{"k":${k},"o":${row.ownerId},"i":"${row.id}","n":${JSON.stringify(row.name)},"t":${JSON.stringify(row.tag)}}`,
      )
      .join(",")}]`;
    const inserted = (await client.unsafe(INSERT_GROUP, [json]).values()) as Array<[key: string]>;
    return new Set(inserted.map(([key]) => key));
  }

  const keyOf = (row: Row) => `${row.ownerId}:${row.id}`;

  async function runGroup(group: Pending[]): Promise<void> {
    const firsts = new Map<string, Pending>();
    for (const waiting of group) if (!firsts.has(keyOf(waiting.item))) firsts.set(keyOf(waiting.item), waiting);
    let inserted: Set<string>;
    try {
      inserted = await insertRows([...firsts.values()].map((waiting) => waiting.item));
    } catch (error) {
      if (group.length > 1 && rowFault(error)) return runOneByOne(group);
      throw error;
    }
    for (const waiting of group) {
      const key = keyOf(waiting.item);
      waiting.resolve(firsts.get(key) === waiting && inserted.has(key));
    }
  }

  async function runOneByOne(group: Pending[]): Promise<void> {
    for (const waiting of group) {
      try {
        waiting.resolve((await insertRows([waiting.item])).size > 0);
      } catch (error) {
        waiting.reject(error);
      }
    }
  }

  const groups = createGroups(runGroup, options);
  return {
    /** True once the row is committed, false when the owner already has this id. */
    insert: (ownerId: number, id: bigint, name: string, tag: string | null): Promise<boolean> =>
      groups.add({ ownerId, id, name, tag }),
  };
}
