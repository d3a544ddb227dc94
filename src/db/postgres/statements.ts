import { and, asc, eq, gt, isNull, sql } from "drizzle-orm";
import type { BunSQLDatabase } from "drizzle-orm/bun-sql";
import { LIST_SHAPES, listParamNames } from "../list-shapes";
import { positional } from "../positional";
import { plants, tokens, users } from "./schema";

/**
 * The stores' SQL, written by Drizzle from the schema. Rendered when the code is bundled or
 * transpiled (sql-texts.ts), so a start builds no query; the driver runs the texts and returns
 * bare rows, read as values in the order selected here (Drizzle's prepared query filled
 * placeholders and mapped every row through nested async spans: 10 % of an instance's CPU
 * under `GET /plants` load, `bun --cpu-prof`).
 */
export interface PostgresSql {
  plants: {
    /** Per list shape (LIST_SHAPES' order): the ids from the cursor on, for the walk to a long list's last id. */
    ids: string[];
    /**
     * Per list shape: one page's keyset walk, its rows referring to the recordset row `q`
     * (plants.ts); `walkCap` stands where the walk's cap (its LIMIT) goes.
     */
    pageWalks: string[];
    walkCap: string;
    /** (ownerId, id) → [name, tag]. */
    getOne: string;
  };
  tokens: {
    /** A comma list of hashes → [hash, tokenId, userId, lastUsedAt] of the active ones. */
    findActiveByHashes: string;
    /** (now, tokenId). */
    touch: string;
    /** Whether the table holds any token, revoked ones included (bootstrap). */
    anyToken: string;
    insertUser: string;
    userByName: string;
    /** → [id]. */
    insertToken: string;
    /** [id, user name, createdAt, lastUsedAt, revokedAt] in id order. */
    list: string;
    /** (now, tokenId) → [id] when it was active. */
    revoke: string;
    /** id → [id]. */
    exists: string;
  };
}

/** Written where a page walk's cap goes; the store puts its own number there. */
const WALK_CAP = "__page_walk_rows__";

type Renderer = BunSQLDatabase<Record<string, never>>;
const p = sql.placeholder;

function plantSql(db: Renderer): PostgresSql["plants"] {
  const ids = LIST_SHAPES.map(({ after, tag }) => {
    const conditions = [eq(plants.ownerId, p("ownerId"))];
    if (tag) conditions.push(eq(plants.tag, p("tag")));
    if (after) conditions.push(gt(plants.id, p("after")));
    const query = db
      .select({ id: plants.id })
      .from(plants)
      .where(and(...conditions))
      .orderBy(asc(plants.id))
      .limit(p("limit"));
    return positional(query, listParamNames({ after, tag }));
  });
  const pageWalks = LIST_SHAPES.map(({ after, tag }) => {
    const conditions = [eq(plants.ownerId, sql`q.o`)];
    if (tag) conditions.push(eq(plants.tag, sql`q.t`));
    if (after) conditions.push(gt(plants.id, sql`q.a`));
    return db
      .select({ id: plants.id, name: plants.name, tag: plants.tag })
      .from(plants)
      .where(and(...conditions))
      .orderBy(asc(plants.id))
      .limit(sql.raw(WALK_CAP) as unknown as number)
      .toSQL().sql;
  });
  const getOne = db
    .select({ name: plants.name, tag: plants.tag })
    .from(plants)
    .where(and(eq(plants.ownerId, p("ownerId")), eq(plants.id, p("id"))));
  return { ids, pageWalks, walkCap: WALK_CAP, getOne: positional(getOne, ["ownerId", "id"]) };
}

function tokenSql(db: Renderer): PostgresSql["tokens"] {
  // Times are bound as ISO 8601 text and read back as Dates by the driver.
  const at = (name: string) => sql`${p(name)}::timestamptz`;
  return {
    findActiveByHashes: positional(
      db
        .select({ hash: tokens.hash, tokenId: tokens.id, userId: tokens.userId, lastUsedAt: tokens.lastUsedAt })
        .from(tokens)
        .where(and(sql`${tokens.hash} = ANY(string_to_array(${p("hashes")}::text, ','))`, isNull(tokens.revokedAt))),
      ["hashes"],
    ),
    touch: positional(
      db
        .update(tokens)
        .set({ lastUsedAt: at("now") })
        .where(eq(tokens.id, p("tokenId"))),
      ["now", "tokenId"],
    ),
    anyToken: db
      .select({ id: tokens.id })
      .from(tokens)
      .limit(sql.raw("1") as unknown as number)
      .toSQL().sql,
    insertUser: positional(
      db
        .insert(users)
        .values({ name: p("name"), createdAt: at("at") })
        .onConflictDoNothing(),
      ["name", "at"],
    ),
    userByName: positional(
      db
        .select({ id: users.id })
        .from(users)
        .where(eq(users.name, p("name"))),
      ["name"],
    ),
    insertToken: positional(
      db
        .insert(tokens)
        .values({ userId: p("userId"), hash: p("hash"), createdAt: at("at") })
        .returning({ id: tokens.id }),
      ["userId", "hash", "at"],
    ),
    list: positional(
      db
        .select({
          id: tokens.id,
          user: users.name,
          createdAt: tokens.createdAt,
          lastUsedAt: tokens.lastUsedAt,
          revokedAt: tokens.revokedAt,
        })
        .from(tokens)
        .innerJoin(users, eq(users.id, tokens.userId))
        .orderBy(asc(tokens.id)),
      [],
    ),
    revoke: positional(
      db
        .update(tokens)
        .set({ revokedAt: at("at") })
        .where(and(eq(tokens.id, p("id")), isNull(tokens.revokedAt)))
        .returning({ id: tokens.id }),
      ["at", "id"],
    ),
    exists: positional(
      db
        .select({ id: tokens.id })
        .from(tokens)
        .where(eq(tokens.id, p("id"))),
      ["id"],
    ),
  };
}

export function postgresSql(db: Renderer): PostgresSql {
  return { plants: plantSql(db), tokens: tokenSql(db) };
}
