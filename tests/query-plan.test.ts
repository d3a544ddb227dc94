import { describe, expect, test } from "bun:test";
import { openDatabase } from "../src/db/client";
import { listPlantsQuery } from "../src/plants/queries";

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
});
