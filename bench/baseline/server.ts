/**
 * Performance baseline: the Plant Store SPEC on plain `Bun.serve` and prepared `bun:sqlite`
 * statements, no framework and no ORM. It does every check the real service does on the
 * benchmarked paths (bearer token hashed and looked up on every request, revocation honoured,
 * last_used_at at most once a minute, body limit, media type, exact int64 ids, code-point
 * lengths, a limited page's `Link` to the next one, nosniff on every response, and the request
 * id, access-log line and request metrics of ./observe.ts), so the gap to the service is what
 * the framework, the ORM and the libraries cost. Not done: rate limiting (the bench runs the
 * service with RATE_LIMIT_PER_MINUTE=0), CORS (off by default in the service), `after` and `tag`
 * (the bench lists first pages only) and /swagger. `/healthz` answers `{"status":"ok"}`.
 *
 * With BASELINE_SCHEMA=bare it makes its own plain plants/tokens/users tables (./db.ts) instead
 * of the service's migrations: `bun run bench` runs the bare floor so, to tell what the schema costs.
 *
 * With BASELINE_BARE=1 (`bun run bench:floor`) it skips ./observe.ts's work, the same checks
 * and statements without the request id, access log or metrics: the bench's floor, what no
 * framework and no observability cost.
 *
 *   PORT=0 HOST=127.0.0.1 DATABASE_URL=/tmp/b.sqlite DB_SYNCHRONOUS=NORMAL bun bench/baseline/server.ts
 *
 * Prints exactly one line, `listening on http://HOST:PORT`, once it accepts connections.
 */

import { parseIdSegment } from "./body";
import { closeDatabase, openDatabase } from "./db";
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

function databasePath(url: string | undefined): string {
  const value = url?.trim() || "./data/plants.sqlite";
  if (value.startsWith("file://")) return new URL(value).pathname;
  if (value.startsWith("file:")) return value.slice("file:".length).split("?")[0] ?? "";
  return value;
}

const address = listenAddress();

let sqlite: ReturnType<typeof openDatabase>;
try {
  sqlite = openDatabase(databasePath(process.env.DATABASE_URL), process.env.DB_SYNCHRONOUS);
} catch (error) {
  fail(`cannot open the database: ${error instanceof Error ? error.message : String(error)}`);
}

/*
 * SQLite 3.54 (Bun 1.4) re-plans some statements on every run when a bound parameter stands
 * alone in a WHERE or LIMIT term; written as an expression, `(? + 0)` / `(? || '')`, the plan
 * is kept. Measured here with bun:sqlite, 1,000 plants per owner, best of 5 (µs per call):
 *
 *   list, 20 rows:  owner = ?       LIMIT ?        7.41
 *                   owner = ?       LIMIT (? + 0)  7.53
 *                   owner = (? + 0) LIMIT ?        7.77
 *                   owner = (? + 0) LIMIT (? + 0)  5.39   <- used
 *   list, all 1000: the four within 190-203, noise level
 *   token lookup:   hash = ?        (join users)   5.55
 *                   hash = (? || '') (join users)  2.22   <- used
 *
 * A DML statement with RETURNING run through .get() measured 15-16 µs against 22-25 µs for
 * the same statement without RETURNING through .run() (insert and delete alike, WAL, NORMAL),
 * so writes use RETURNING + .get(), as the service (Drizzle's .get()) does.
 */
const findToken = sqlite.prepare<{ id: number; user_id: number; last_used_at: number | null }, [string]>(
  "SELECT t.id, u.id AS user_id, t.last_used_at FROM tokens t JOIN users u ON u.id = t.user_id " +
    "WHERE t.hash = (? || '') AND t.revoked_at IS NULL",
);
const touchToken = sqlite.prepare<unknown, [number, number]>("UPDATE tokens SET last_used_at = ? WHERE id = ?");
const insertPlant = sqlite.prepare<{ ok: number }, [number, bigint, string, string | null]>(
  "INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1 AS ok",
);
// Ids are read as bigints, exact past 2^53 (the service does the same): the last one names the next page.
const listPlants = sqlite
  .prepare<{ id: bigint | undefined; name: string; tag: string | null | undefined }, [number, number]>(
    "SELECT id, name, tag FROM plants WHERE owner_id = (? + 0) ORDER BY id LIMIT (? + 0)",
  )
  .safeIntegers(true);
const deletePlant = sqlite.prepare<{ ok: number }, [number, bigint]>(
  "DELETE FROM plants WHERE owner_id = ? AND id = ? RETURNING 1 AS ok",
);

/**
 * The caller's user id, or NO_TOKEN / INVALID_TOKEN: the token is hashed and looked up on every
 * request.
 */
function authenticate(request: Request): number {
  const token = bearerToken(request);
  if (token === undefined) return NO_TOKEN;
  const row = findToken.get(Bun.SHA256.hash(token, "hex"));
  if (row === null) return INVALID_TOKEN;
  const now = Date.now();
  const lastUsedAt = row.last_used_at;
  if (lastUsedAt === null || now - lastUsedAt >= LAST_USED_GRANULARITY_MS) touchToken.run(now, row.id);
  noteUser(request, row.user_id);
  return row.user_id;
}

serve(
  address,
  {
    list(request, url, queryStart) {
      const user = authenticate(request);
      if (user < 0) return unauthorized(user);
      const limit = parseLimit(url, queryStart);
      if (limit === BAD_LIMIT) return badLimit();
      // NO_LIMIT is -1, which SQLite reads as no limit. A limited page reads one plant more: if
      // it is there, the answer links the next page (SPEC, paging), as the service's does.
      const rows = listPlants.all(user, limit === NO_LIMIT ? NO_LIMIT : limit + 1);
      const more = limit !== NO_LIMIT && rows.length > limit;
      if (more) rows.pop();
      const lastId = rows.at(-1)?.id;
      // JSON.stringify leaves out a property whose value is undefined: the id, and a missing tag.
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i] as { id: bigint | undefined; tag: string | null | undefined };
        row.id = undefined;
        if (row.tag === null) row.tag = undefined;
      }
      if (!more || lastId === undefined) return new Response(JSON.stringify(rows), { headers: JSON_OK });
      const link = `</plants?limit=${limit}&after=${lastId}>; rel="next"`;
      return new Response(JSON.stringify(rows), { headers: { ...JSON_OK, link } });
    },

    async create(request, declaredLength) {
      const user = authenticate(request);
      if (user < 0) return unauthorized(user);
      const plant = await readNewPlant(request, declaredLength);
      if (plant instanceof Response) return plant;
      if (insertPlant.get(user, plant.id, plant.name, plant.tag) === null) return duplicate();
      return createdPlant(plant);
    },

    remove(request, segment) {
      const user = authenticate(request);
      if (user < 0) return unauthorized(user);
      const id = parseIdSegment(segment);
      if (id === undefined) return badId();
      if (deletePlant.get(user, id) === null) return noSuchPlant();
      return deleted();
    },
  },
  () => closeDatabase(sqlite),
);
