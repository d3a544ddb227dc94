import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { openDatabase } from "../../src/db/sqlite/client";
import { listSql } from "../../src/db/sqlite/queries";

type ListShape = { after?: boolean; tag?: boolean; idsOnly?: boolean };

import { onSqlite } from "../support/helpers";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

/** What SQLite plans for the list statement the plant store runs with these filters (and ids only, or whole plants). */
function planOf({ after = false, tag = false, idsOnly = false }: ListShape) {
  const { sqlite } = openDatabase({ path: ":memory:", synchronous: "FULL" });
  const sql = listSql({ after: after ? 0n : undefined, tag: tag ? "" : undefined }, idsOnly);
  const plan = sqlite.query(`EXPLAIN QUERY PLAN ${sql}`).all(1, tag ? "a" : null, after ? 1 : null, 1) as Array<{
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
    // A page of plants is read from a covering index only while that index holds every column
    // (a new column changes that, not the walk); an id walk always is.
    const loose = (text: string) => ((options as ListShape).idsOnly ? text : text.replace("COVERING INDEX", "INDEX"));
    expect(details.map(loose)).toEqual([loose(detail)]);
    expect(sql).toContain("LIMIT (?4 + 0)");
  });
});
