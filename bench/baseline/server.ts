/**
 * Performance baseline: the Plant Store SPEC on plain `Bun.serve` and prepared `bun:sqlite`
 * statements, no framework and no ORM. It does every check the real service does on the
 * benchmarked paths (bearer token hashed and looked up on every request, revocation honoured,
 * last_used_at at most once a minute, body limit, media type, exact int64 ids, code-point
 * lengths, nosniff on every response, and the request id, access-log line and request
 * metrics of ./observe.ts), so the gap to the service is what the framework, the ORM and the
 * libraries cost. Not done: rate limiting (the bench runs the service with RATE_LIMIT_PER_MINUTE=0),
 * CORS (off by default in the service) and /swagger. `/healthz` answers `{"status":"ok"}`.
 *
 *   PORT=0 HOST=127.0.0.1 DATABASE_URL=/tmp/b.sqlite DB_SYNCHRONOUS=NORMAL bun bench/baseline/server.ts
 *
 * Prints exactly one line, `listening on http://HOST:PORT`, once it accepts connections.
 */
import { BODY_LIMIT_BYTES, BodyError, type NewPlant, parseIdSegment, parseNewPlant, readBody, TOO_LARGE } from "./body";
import { closeDatabase, openDatabase } from "./db";
import { flushLog, notes, observed } from "./observe";

const LAST_USED_GRANULARITY_MS = 60_000;
const MAX_IN_FLIGHT = 1024;
const INT32_MAX = 2_147_483_647;
/** SQLite reads LIMIT -1 as "no limit". */
const NO_LIMIT = -1;
const BAD_LIMIT = -2;

function fail(message: string): never {
  console.error(`plant-store baseline: ${message}`);
  process.exit(1);
}

function databasePath(url: string | undefined): string {
  const value = url?.trim() || "./data/plants.sqlite";
  if (value.startsWith("file://")) return new URL(value).pathname;
  if (value.startsWith("file:")) return value.slice("file:".length).split("?")[0] ?? "";
  return value;
}

const portText = process.env.PORT?.trim() || "3000";
if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) fail("PORT must be an integer between 0 and 65535");
const host = process.env.HOST?.trim() || "127.0.0.1";

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
const listPlants = sqlite.prepare<{ name: string; tag: string | null | undefined }, [number, number]>(
  "SELECT name, tag FROM plants WHERE owner_id = (? + 0) ORDER BY id LIMIT (? + 0)",
);
const deletePlant = sqlite.prepare<{ ok: number }, [number, bigint]>(
  "DELETE FROM plants WHERE owner_id = ? AND id = ? RETURNING 1 AS ok",
);

// ---------------------------------------------------------------------------------------------
// Responses

const JSON_OK = { "content-type": "application/json;charset=utf-8", "x-content-type-options": "nosniff" };
const JSON_ERROR = { "content-type": "application/json", "x-content-type-options": "nosniff" };
const NO_CONTENT = { "x-content-type-options": "nosniff" };

function errorBody(status: number, message: string): string {
  return `{"error":${status},"message":${JSON.stringify(message)}}`;
}

/** A fixed error: body and headers built once, a new Response per request. */
function fixedError(status: number, message: string, extraHeaders?: Record<string, string>) {
  const body = errorBody(status, message);
  const init = { status, headers: extraHeaders ? { ...JSON_ERROR, ...extraHeaders } : JSON_ERROR };
  return () => new Response(body, init);
}

const noToken = fixedError(401, "Authentication required: send the header Authorization: Bearer <token>.", {
  "www-authenticate": "Bearer",
});
const invalidToken = fixedError(401, "The bearer token is not valid: it is unknown or has been revoked.", {
  "www-authenticate": 'Bearer error="invalid_token"',
});
const noRoute = fixedError(404, "No route matches this path.");
const collectionMethods = fixedError(405, "This path accepts only GET, POST.", { allow: "GET, POST" });
const itemMethods = fixedError(405, "This path accepts only DELETE.", { allow: "DELETE" });
const badLimit = fixedError(400, "limit: must be an integer between 0 and 2147483647");
const badId = fixedError(400, "id: must be an integer between -9223372036854775808 and 9223372036854775807");
const noSuchPlant = fixedError(404, "id: you have no plant with this id");
const duplicate = fixedError(409, "id: you already have a plant with this id; delete it first to replace it");
const fragment = fixedError(400, "The request target must not contain '#'; percent-encode it as %23.");
const atCapacity = fixedError(503, "The service is at capacity; retry in a moment.", { "retry-after": "1" });
const internal = fixedError(500, "Internal server error; the failure has been logged.");
const HEALTHY_BODY = '{"status":"ok"}';
const HEALTHY_HEADERS = { ...JSON_OK, "cache-control": "no-store" };
const healthy = () => new Response(HEALTHY_BODY, { headers: HEALTHY_HEADERS });

const bodyErrors = new Map<BodyError, () => Response>();
function bodyError(error: BodyError): Response {
  let make = bodyErrors.get(error);
  if (make === undefined) {
    make = fixedError(error.status, error.message);
    bodyErrors.set(error, make);
  }
  return make();
}

// ---------------------------------------------------------------------------------------------
// Authentication

const NO_TOKEN = -1;
const INVALID_TOKEN = -2;

/** "Bearer" at `start`, case-insensitive (ASCII only, as the service's /i regex without the u flag). */
function isBearerScheme(header: string, start: number): boolean {
  return (
    (header.charCodeAt(start) | 0x20) === 0x62 &&
    (header.charCodeAt(start + 1) | 0x20) === 0x65 &&
    (header.charCodeAt(start + 2) | 0x20) === 0x61 &&
    (header.charCodeAt(start + 3) | 0x20) === 0x72 &&
    (header.charCodeAt(start + 4) | 0x20) === 0x65 &&
    (header.charCodeAt(start + 5) | 0x20) === 0x72
  );
}

/**
 * The caller's user id, or NO_TOKEN / INVALID_TOKEN. Same rules as src/auth/plugin.ts: the
 * header only, `Bearer` in any case, then spaces or tabs, then the token; the token is hashed
 * and looked up on every request.
 */
function authenticate(request: Request): number {
  const raw = request.headers.get("authorization");
  if (raw === null) return NO_TOKEN;
  const header = raw.trim();
  if (header.length < 8 || !isBearerScheme(header, 0)) return NO_TOKEN;
  const separator = header.charCodeAt(6);
  if (separator !== 0x20 && separator !== 0x09) return NO_TOKEN;
  const token = header.slice(7).trim();
  if (token === "") return NO_TOKEN;
  const row = findToken.get(Bun.SHA256.hash(token, "hex"));
  if (row === null) return INVALID_TOKEN;
  const now = Date.now();
  const lastUsedAt = row.last_used_at;
  if (lastUsedAt === null || now - lastUsedAt >= LAST_USED_GRANULARITY_MS) touchToken.run(now, row.id);
  const note = notes.get(request);
  if (note) note.userId = row.user_id;
  return row.user_id;
}

function unauthorized(user: number): Response {
  return user === NO_TOKEN ? noToken() : invalidToken();
}

// ---------------------------------------------------------------------------------------------
// Query string: `limit`, as Elysia reads it (keys and values percent-decoded, the last one wins)

function decodeComponent(text: string): string | undefined {
  if (!text.includes("%") && !text.includes("+")) return text;
  try {
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    return undefined;
  }
}

function limitValue(text: string | undefined): number {
  if (text === undefined) return BAD_LIMIT;
  const length = text.length;
  if (length === 0 || length > 10) return BAD_LIMIT;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return BAD_LIMIT;
  }
  const value = Number(text);
  return value > INT32_MAX ? BAD_LIMIT : value;
}

/** NO_LIMIT when the query has no `limit`, BAD_LIMIT when it is not 0..2147483647, else the value. */
function parseLimit(url: string, queryStart: number): number {
  if (queryStart < 0) return NO_LIMIT;
  let limit = NO_LIMIT;
  const end = url.length;
  let start = queryStart + 1;
  while (start < end) {
    let next = url.indexOf("&", start);
    if (next < 0) next = end;
    let equals = url.indexOf("=", start);
    if (equals < 0 || equals > next) equals = next;
    const isLimit =
      equals - start === 5
        ? url.startsWith("limit", start)
        : equals > start && decodeComponent(url.slice(start, equals)) === "limit";
    if (isLimit) limit = limitValue(equals === next ? "" : decodeComponent(url.slice(equals + 1, next)));
    start = next + 1;
  }
  return limit;
}

// ---------------------------------------------------------------------------------------------
// Handlers

function list(request: Request, url: string, queryStart: number): Response {
  const user = authenticate(request);
  if (user < 0) return unauthorized(user);
  const limit = parseLimit(url, queryStart);
  if (limit === BAD_LIMIT) return badLimit();
  const rows = listPlants.all(user, limit);
  // JSON.stringify leaves out a property whose value is undefined: a plant without a tag.
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as { tag: string | null | undefined };
    if (row.tag === null) row.tag = undefined;
  }
  return new Response(JSON.stringify(rows), { headers: JSON_OK });
}

let inFlight = 0;

async function create(request: Request, declaredLength: string | null): Promise<Response> {
  const user = authenticate(request);
  if (user < 0) return unauthorized(user);
  // Only this handler awaits, so only it can hold a request in flight across a turn.
  inFlight++;
  let bytes: Uint8Array | BodyError;
  try {
    bytes = await readBody(request, declaredLength);
  } finally {
    inFlight--;
  }
  if (bytes instanceof BodyError) return bodyError(bytes);
  const plant: NewPlant | BodyError = parseNewPlant(bytes, request.headers.get("content-type"));
  if (plant instanceof BodyError) return bodyError(plant);
  if (insertPlant.get(user, plant.id, plant.name, plant.tag) === null) return duplicate();
  const body =
    plant.tag === null
      ? `{"name":${JSON.stringify(plant.name)}}`
      : `{"name":${JSON.stringify(plant.name)},"tag":${JSON.stringify(plant.tag)}}`;
  return new Response(body, { headers: JSON_OK });
}

function remove(request: Request, segment: string): Response {
  const user = authenticate(request);
  if (user < 0) return unauthorized(user);
  const id = parseIdSegment(segment);
  if (id === undefined) return badId();
  if (deletePlant.get(user, id) === null) return noSuchPlant();
  return new Response(null, { status: 204, headers: NO_CONTENT });
}

/** Digits only and over the limit: answered before any of the body is read. */
function declaredTooLarge(length: string): boolean {
  const size = length.length;
  if (size === 0) return false;
  for (let i = 0; i < size; i++) {
    const c = length.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return Number(length) > BODY_LIMIT_BYTES;
}

const PLANTS = "/plants";
const HEALTHZ = "/healthz";
const SLASH = 0x2f;

function route(request: Request): Response | Promise<Response> {
  if (inFlight >= MAX_IN_FLIGHT) return atCapacity();
  const url = request.url;
  if (url.includes("#")) return fragment();
  const declaredLength = request.headers.get("content-length");
  if (declaredLength !== null && declaredTooLarge(declaredLength)) return bodyError(TOO_LARGE);

  // The URL is absolute ("http://host:port/path?query"); the host holds no '/'.
  const pathStart = url.indexOf("/", 8);
  // The bench polls it while big lists are read, as it polls the service's.
  if (url.length === pathStart + HEALTHZ.length && url.startsWith(HEALTHZ, pathStart)) return healthy();
  if (pathStart < 0 || !url.startsWith(PLANTS, pathStart)) return noRoute();
  const queryStart = url.indexOf("?", pathStart);
  const pathEnd = queryStart < 0 ? url.length : queryStart;
  const afterPlants = pathStart + PLANTS.length;

  // "/plants" or "/plants/"
  if (afterPlants === pathEnd || (afterPlants + 1 === pathEnd && url.charCodeAt(afterPlants) === SLASH)) {
    const method = request.method;
    if (method === "GET" || method === "HEAD") return list(request, url, queryStart);
    if (method === "POST") return create(request, declaredLength);
    return collectionMethods();
  }
  // "/plants/{id}" or "/plants/{id}/"
  if (url.charCodeAt(afterPlants) !== SLASH) return noRoute();
  const segmentEnd = url.charCodeAt(pathEnd - 1) === SLASH ? pathEnd - 1 : pathEnd;
  if (segmentEnd <= afterPlants + 1) return noRoute();
  const segment = url.slice(afterPlants + 1, segmentEnd);
  if (segment.includes("/")) return noRoute();
  if (request.method === "DELETE") return remove(request, segment);
  return itemMethods();
}

// ---------------------------------------------------------------------------------------------
// Server

let server: ReturnType<typeof Bun.serve>;
try {
  server = Bun.serve({
    port: Number(portText),
    hostname: host,
    idleTimeout: 30,
    // Past this Bun answers a bare 413 itself; below it the handler answers with the Error body.
    maxRequestBodySize: 2 ** 31 - 1,
    fetch: observed(route),
    error(error) {
      console.error("unhandled error", error);
      return internal();
    },
  });
} catch (error) {
  sqlite.close();
  fail(`cannot listen on ${host}:${portText}: ${error instanceof Error ? error.message : String(error)}`);
}
console.log(`listening on http://${host}:${server.port}`);
flushLog();

let stopping = false;
async function shutdown() {
  if (stopping) return;
  stopping = true;
  await server.stop(true);
  closeDatabase(sqlite);
  await flushLog();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown());
process.on("SIGTERM", () => void shutdown());
