/**
 * Performance baseline on PostgreSQL: the same routes and per-request checks as ./server.ts, on
 * plain `Bun.serve` and Bun's own `SQL` client, no framework and no ORM. It runs the very SQL
 * text the service's PostgreSQL stores run (src/db/postgres/plants.ts and tokens.ts, as Drizzle
 * renders it), through `sql.unsafe(text, params)` as Drizzle's bun-sql driver does, so Bun
 * prepares each statement once per connection on both sides; the pool has the service's
 * settings (DB_POOL_SIZE, default 10). A page reads one row past its limit and answers a `Link`
 * to the next page, as the service does; a list past 1,000 plants is read in keyset steps of
 * 1,000, as the service does, but answered whole rather than streamed (not benchmarked). Each
 * create and delete logs its change in its own statement, and the log is stamped at most every
 * 100 ms, with the service's SQL (src/db/postgres/queries.ts and change-queries.ts): the change
 * log is part of every write since round 4, and a floor without it would not be correct.
 *
 * It does not migrate: run the service's `bun run cli migrate` on the database first. With
 * BASELINE_BARE=1 (`bun run bench:floor:postgres`) it skips ./observe.ts's work, as ./server.ts.
 *
 *   PORT=0 DATABASE_URL=postgres://postgres@127.0.0.1:5432/baseline bun bench/baseline/postgres-server.ts
 */
import { SQL } from "bun";
import { parseIdSegment } from "./body";
import {
  BAD_LIMIT,
  badId,
  badLimit,
  bearerToken,
  createdPlant,
  deleted,
  duplicate,
  INVALID_TOKEN,
  JSON_OK,
  NO_LIMIT,
  NO_TOKEN,
  noSuchPlant,
  noteUser,
  parseLimit,
  readNewPlant,
  unauthorized,
} from "./http";
import { fail, listenAddress, serve } from "./serve";

const LAST_USED_GRANULARITY_MS = 60_000;
/** The service's LIST_CHUNK_SIZE: how many plants one step of a long list reads. */
const LIST_CHUNK = 1000;

const FIND_TOKEN =
  'select "id", "user_id", "last_used_at" from "tokens" where ("tokens"."hash" = $1 and "tokens"."revoked_at" is null)';
const TOUCH_TOKEN = 'update "tokens" set "last_used_at" = $1::timestamptz where "tokens"."id" = $2';
/** The change log's part of a write, as the service's `logged` CTE; `at`: the time in ms. */
const logChange = (source: string, type: string, at: string) => `logged AS (
      INSERT INTO plant_change_inbox (owner_id, type, at, "id", "name", "tag")
      SELECT owner_id, '${type}', to_timestamp(${at}::float8 / 1000), "id", "name", "tag" FROM ${source}
    )`;
const INSERT_PLANT = `WITH inserted AS (
      insert into "plants" ("owner_id", "id", "name", "tag") values ($1, $2, $3, $4) on conflict do nothing
      returning "owner_id", "id", "name", "tag"
    ), ${logChange("inserted", "plant.created", "$5")} SELECT "name", "tag" FROM inserted`;
const LIST_PLANTS =
  'select "id", "name", "tag" from "plants" where "plants"."owner_id" = $1 order by "plants"."id" asc limit $2';
const LIST_PLANTS_AFTER =
  'select "id", "name", "tag" from "plants" where ("plants"."owner_id" = $1 and "plants"."id" > $2) order by "plants"."id" asc limit $3';
const DELETE_PLANT = `WITH gone AS (
      delete from "plants" where ("plants"."owner_id" = $1 and "plants"."id" = $2) returning "owner_id", "id", "name", "tag"
    ), ${logChange("gone", "plant.deleted", "$3")} SELECT 1 FROM gone`;
/** The service's stamp (src/db/postgres/changes.ts): under an advisory lock, up to $1 changes numbered in the order written. */
const STAMP_LOCK = "SELECT pg_advisory_xact_lock(7562609)";
const STAMP = `WITH moved AS (
      DELETE FROM plant_change_inbox WHERE pos = ANY(ARRAY(SELECT pos FROM plant_change_inbox ORDER BY pos LIMIT $1))
      RETURNING *
    ), base AS (SELECT coalesce(max(seq), 0) AS s FROM plant_changes)
    INSERT INTO plant_changes (seq, owner_id, type, at, "id", "name", "tag")
    SELECT base.s + row_number() OVER (ORDER BY pos), owner_id, type, at, "id", "name", "tag" FROM moved, base
    RETURNING 1`;
const STAMP_BATCH = 1000;
const STAMP_SPACING_MS = 100;

function setting(name: string, fallback: number, min: number, max: number): number {
  const text = process.env[name]?.trim() || String(fallback);
  const value = Number(text);
  if (!/^[0-9]+$/.test(text) || value < min || value > max) fail(`${name} must be an integer from ${min} to ${max}`);
  return value;
}

const url = process.env.DATABASE_URL?.trim() ?? "";
if (!/^postgres(?:ql)?:\/\//i.test(url)) fail("DATABASE_URL must be a postgres:// URL");
const address = listenAddress();
// The service's pool (src/db/postgres/client.ts connect()), from the same settings and defaults.
const sql = new SQL(url, {
  max: setting("DB_POOL_SIZE", 10, 1, 1000),
  connectionTimeout: Math.ceil(setting("DB_CONNECT_TIMEOUT_MS", 5_000, 100, 600_000) / 1000),
  idleTimeout: 60,
  connection: {
    statement_timeout: setting("DB_STATEMENT_TIMEOUT_MS", 10_000, 100, 3_600_000),
    application_name: "plant-store-baseline",
  },
});
try {
  const [row] = await sql`SELECT to_regclass('public.plants') IS NOT NULL AS migrated`;
  if (!row?.migrated) fail("the database has no plants table: run `bun run cli migrate` on it first");
} catch (error) {
  fail(`cannot reach the database: ${error instanceof Error ? error.message : String(error)}`);
}

type PlantRow = [id: string, name: string, tag: string | null];

/** Token ids whose last_used_at is being written: one write per token at a time, as the service. */
const recording = new Set<number>();

function recordUse(tokenId: number, now: number) {
  if (recording.has(tokenId)) return;
  recording.add(tokenId);
  sql
    .unsafe(TOUCH_TOKEN, [new Date(now).toISOString(), tokenId])
    .catch(() => {})
    .finally(() => recording.delete(tokenId));
}

let stampDue = false;

/** Writes within STAMP_SPACING_MS of each other share a stamp, as in the service. */
function logged() {
  if (stampDue) return;
  stampDue = true;
  setTimeout(async () => {
    stampDue = false;
    for (;;) {
      const count = await sql
        .begin(async (tx) => {
          await tx.unsafe(STAMP_LOCK);
          const rows = await tx.unsafe(STAMP, [STAMP_BATCH]);
          if (rows.length > 0) await tx.unsafe("SELECT pg_notify('plant_changes', '')");
          return rows.length;
        })
        .catch(() => 0);
      if (count < STAMP_BATCH) break;
    }
  }, STAMP_SPACING_MS).unref();
}

/** The caller's user id, or NO_TOKEN / INVALID_TOKEN: the token is hashed and looked up on every request. */
async function authenticate(request: Request): Promise<number> {
  const token = bearerToken(request);
  if (token === undefined) return NO_TOKEN;
  const [row] = (await sql.unsafe(FIND_TOKEN, [Bun.SHA256.hash(token, "hex")]).values()) as Array<
    [tokenId: number, userId: number, lastUsedAt: Date | null]
  >;
  if (row === undefined) return INVALID_TOKEN;
  const [tokenId, userId, lastUsedAt] = row;
  const now = Date.now();
  if (lastUsedAt === null || now - lastUsedAt.getTime() >= LAST_USED_GRANULARITY_MS) recordUse(tokenId, now);
  noteUser(request, userId);
  return userId;
}

/** Up to `count` of the owner's plants after `after`, and whether more follow: reads one row more. */
async function page(user: number, after: string | undefined, count: number) {
  const rows = (await (after === undefined
    ? sql.unsafe(LIST_PLANTS, [user, count + 1])
    : sql.unsafe(LIST_PLANTS_AFTER, [user, BigInt(after), count + 1])
  ).values()) as PlantRow[];
  const more = rows.length > count;
  if (more) rows.pop();
  return { rows, more };
}

/** The plants' JSON as the service writes it: no `tag` when a plant has none. */
function plantsJson(rows: PlantRow[]): string {
  const plants = rows.map(([, name, tag]) => (tag === null ? { name } : { name, tag }));
  return JSON.stringify(plants);
}

async function list(request: Request, url: string, queryStart: number): Promise<Response> {
  const user = await authenticate(request);
  if (user < 0) return unauthorized(user);
  const limit = parseLimit(url, queryStart);
  if (limit === BAD_LIMIT) return badLimit();
  let remaining = limit === NO_LIMIT ? Number.POSITIVE_INFINITY : limit;
  let { rows, more } = await page(user, undefined, Math.min(LIST_CHUNK, remaining));
  const all = rows;
  remaining -= rows.length;
  while (more && remaining > 0) {
    ({ rows, more } = await page(user, (all.at(-1) as PlantRow)[0], Math.min(LIST_CHUNK, remaining)));
    for (const row of rows) all.push(row);
    remaining -= rows.length;
  }
  const last = all.at(-1);
  if (!more || last === undefined) return new Response(plantsJson(all), { headers: JSON_OK });
  const link = `</plants?limit=${limit}&after=${last[0]}>; rel="next"`;
  return new Response(plantsJson(all), { headers: { ...JSON_OK, link } });
}

async function create(request: Request, declaredLength: string | null): Promise<Response> {
  const user = await authenticate(request);
  if (user < 0) return unauthorized(user);
  const plant = await readNewPlant(request, declaredLength);
  if (plant instanceof Response) return plant;
  const inserted = await sql.unsafe(INSERT_PLANT, [user, plant.id, plant.name, plant.tag, Date.now()]).values();
  if (inserted.length > 0) logged();
  return inserted.length === 0 ? duplicate() : createdPlant(plant);
}

async function remove(request: Request, segment: string): Promise<Response> {
  const user = await authenticate(request);
  if (user < 0) return unauthorized(user);
  const id = parseIdSegment(segment);
  if (id === undefined) return badId();
  const removed = await sql.unsafe(DELETE_PLANT, [user, id, Date.now()]).values();
  if (removed.length > 0) logged();
  return removed.length === 0 ? noSuchPlant() : deleted();
}

serve(address, { list, create, remove }, () => sql.close({ timeout: 5 }));
