/**
 * The list and token statements with a bare bound value against the expression form the stores
 * use (docs/decisions/0004-sqlite-bound-expressions.md): best time per run of 15 alternating rounds.
 */
import { Database } from "bun:sqlite";

const db = new Database(":memory:", { strict: true });
db.run(
  "CREATE TABLE tokens (id INTEGER PRIMARY KEY, user_id INTEGER, hash TEXT UNIQUE, last_used_at INTEGER, revoked_at INTEGER)",
);
db.run("CREATE TABLE plants (owner_id INTEGER, id INTEGER, name TEXT, tag TEXT, PRIMARY KEY (owner_id, id))");
for (let i = 0; i < 1000; i++) db.run("INSERT INTO tokens (user_id, hash) VALUES (?, ?)", [i, `h${i}`]);
for (let i = 0; i < 1000; i++) db.run("INSERT INTO plants VALUES (1, ?, ?, NULL)", [i, `p${i}`]);
const variants = {
  tokenPlain: db.prepare("SELECT id, user_id, last_used_at FROM tokens WHERE hash = ?1 AND revoked_at IS NULL"),
  tokenExpr: db.prepare("SELECT id, user_id, last_used_at FROM tokens WHERE hash = (?1 || '') AND revoked_at IS NULL"),
  listPlain: db.prepare("SELECT id, name, tag FROM plants WHERE owner_id = ?1 ORDER BY id LIMIT ?4"),
  listExpr: db.prepare("SELECT id, name, tag FROM plants WHERE owner_id = (?1 + 0) ORDER BY id LIMIT (?4 + 0)"),
};
const args = {
  tokenPlain: ["h500"],
  tokenExpr: ["h500"],
  listPlain: [1, null, null, 21],
  listExpr: [1, null, null, 21],
};
const best: Record<string, number> = {};
for (let round = 0; round < 15; round++) {
  for (const [name, st] of Object.entries(variants)) {
    const a = args[name as keyof typeof args];
    const n = 50_000;
    const t = performance.now();
    for (let i = 0; i < n; i++) (st as { values(...args: unknown[]): unknown }).values(...a);
    const us = ((performance.now() - t) * 1000) / n;
    best[name] = Math.min(best[name] ?? Infinity, us);
  }
}
console.log(
  Object.entries(best)
    .map(([k, v]) => `${k} ${v.toFixed(2)} µs`)
    .join("\n"),
);
