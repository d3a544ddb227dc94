import { describe, expect, test } from "bun:test";
import { openDatabase } from "../src/db/client";
import { listChunkQuery, listPlantsQuery } from "../src/plants/queries";

describe("the list query", () => {
  test("walks the (owner_id, id) primary key: no scan, no sort, whatever the store holds", () => {
    const { sqlite, db } = openDatabase({ path: ":memory:", synchronous: "FULL" });
    const { sql, params } = listPlantsQuery(db).toSQL();
    const plan = sqlite.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params.map(() => 1) as number[])) as Array<{
      detail: string;
    }>;
    const details = plan.map((step) => step.detail);
    expect(details).toEqual(["SEARCH plants USING INDEX sqlite_autoindex_plants_1 (owner_id=?)"]);
    expect(sql).toContain("limit (? + 0)");
    sqlite.close();
  });

  test.each([
    [false, "SEARCH plants USING INDEX sqlite_autoindex_plants_1 (owner_id=?)"],
    [true, "SEARCH plants USING INDEX sqlite_autoindex_plants_1 (owner_id=? AND id>?)"],
  ])("a long list's step (after an id: %p) walks the same key: no scan, no sort", (afterId, detail) => {
    const { sqlite, db } = openDatabase({ path: ":memory:", synchronous: "FULL" });
    const { sql, params } = listChunkQuery(db, { afterId }).toSQL();
    const plan = sqlite.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params.map(() => 1) as number[])) as Array<{
      detail: string;
    }>;
    expect(plan.map((step) => step.detail)).toEqual([detail]);
    sqlite.close();
  });
});
