import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { LIST_SHAPES } from "../../src/db/list-shapes";
import { READ_SQL } from "../../src/db/sqlite/built-sql";
import { openDatabase } from "../../src/db/sqlite/client";
import type { ListShape } from "../../src/db/sqlite/list-query";
import { onSqlite } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/**
 * What SQLite plans for the list statement the plant store runs with these filters (and ids
 * only, or whole plants): the text Drizzle wrote at build time (built-sql.ts).
 */
function planOf({ after = false, tag = false, idsOnly = false }: ListShape) {
  const { sqlite } = openDatabase({ path: ":memory:", synchronous: "FULL" });
  const texts = READ_SQL.lists[LIST_SHAPES.findIndex((shape) => shape.after === after && shape.tag === tag)];
  const sql = (idsOnly ? texts?.ids : texts?.rows) ?? "";
  const params = 2 + (after ? 1 : 0) + (tag ? 1 : 0);
  const plan = sqlite.query(`EXPLAIN QUERY PLAN ${sql}`).all(...Array<number>(params).fill(1)) as Array<{
    detail: string;
  }>;
  sqlite.close();
  return { sql, details: plan.map((step) => step.detail) };
}

describe.if(onSqlite)("the list query walks an index in id order: no scan, no sort, whatever the store holds", () => {
  test.each([
    [{}, "SEARCH plants USING INDEX sqlite_autoindex_plants_1 (owner_id=?)"],
    [{ after: true }, "SEARCH plants USING INDEX sqlite_autoindex_plants_1 (owner_id=? AND id>?)"],
    [{ tag: true }, "SEARCH plants USING COVERING INDEX plants_owner_tag_id_name_idx (owner_id=? AND tag=?)"],
    [
      { tag: true, after: true },
      "SEARCH plants USING COVERING INDEX plants_owner_tag_id_name_idx (owner_id=? AND tag=? AND id>?)",
    ],
    [{ idsOnly: true }, "SEARCH plants USING COVERING INDEX sqlite_autoindex_plants_1 (owner_id=?)"],
    [
      { idsOnly: true, after: true },
      "SEARCH plants USING COVERING INDEX sqlite_autoindex_plants_1 (owner_id=? AND id>?)",
    ],
    [
      { idsOnly: true, tag: true },
      "SEARCH plants USING COVERING INDEX plants_owner_tag_id_name_idx (owner_id=? AND tag=?)",
    ],
    [
      { idsOnly: true, tag: true, after: true },
      "SEARCH plants USING COVERING INDEX plants_owner_tag_id_name_idx (owner_id=? AND tag=? AND id>?)",
    ],
  ])("%p", (options, detail) => {
    const { sql, details } = planOf(options);
    expect(details).toEqual([detail]);
    expect(sql).toContain("limit (? + 0)");
  });
});
