/**
 * The tag index with and without the name in it: one owner's tagged page of 21 plants, read
 * from an owner with 100,000 plants (30 % tagged "fern", 10 % "cactus") among 99 owners of
 * 5,000, with the list's own SQL shape. Prints µs per page for each index, twice alternating.
 *
 *   bun bench/tag-index.ts
 */
import { Database } from "bun:sqlite";

const PAGES = 100_000;

function store(indexColumns: string): Database {
  const db = new Database(":memory:");
  db.run(
    "CREATE TABLE plants (owner_id integer NOT NULL, id integer NOT NULL, name text NOT NULL, tag text, PRIMARY KEY (owner_id, id))",
  );
  db.run(`CREATE INDEX plants_tag ON plants (${indexColumns})`);
  const insert = db.prepare("INSERT INTO plants VALUES (?, ?, ?, ?)");
  db.transaction(() => {
    for (let owner = 1; owner <= 100; owner++) {
      for (let id = 1; id <= (owner === 1 ? 100_000 : 5_000); id++) {
        const slot = (id * 2654435761) % 1000;
        insert.run(owner, id, `Plant ${id}`, slot < 300 ? "fern" : slot < 400 ? "cactus" : null);
      }
    }
  })();
  return db;
}

function microsPerPage(db: Database): number {
  const page = db
    .prepare(
      "SELECT id, name, tag FROM plants WHERE owner_id = (? + 0) AND tag = ? AND id > (? + 0) ORDER BY id LIMIT (? + 0)",
    )
    .safeIntegers(true);
  const started = performance.now();
  for (let i = 0; i < PAGES; i++) page.all(1, i % 2 ? "fern" : "cactus", (i * 7919) % 90_000, 21);
  return ((performance.now() - started) * 1000) / PAGES;
}

const variants = [
  ["(owner_id, tag, id)", "owner_id, tag, id"],
  ["(owner_id, tag, id, name)", "owner_id, tag, id, name"],
] as const;
for (let round = 1; round <= 2; round++) {
  for (const [label, columns] of variants) {
    console.log(`round ${round} index ${label}: ${microsPerPage(store(columns)).toFixed(2)} µs per tagged page`);
  }
}
