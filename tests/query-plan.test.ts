import { describe, expect, test } from "bun:test";
import { openDatabase } from "../src/db/sqlite/client";
import { listPlantsQuery } from "../src/db/sqlite/plants";
import { onSqlite } from "./helpers";

/** What SQLite plans for the list query with these filters (and ids only, or whole plants). */
function planOf(options: Parameters<typeof listPlantsQuery>[1]) {
  const { sqlite, db } = openDatabase({ path: ":memory:", synchronous: "FULL" });
  const { sql, params } = listPlantsQuery(db, options).toSQL();
  const plan = sqlite.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params.map(() => 1) as number[])) as Array<{
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
