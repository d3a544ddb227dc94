/**
 * The bench's "usual pick": the Plant Store's benchmarked routes (list, create, delete under
 * bearer tokens) written as most Node teams would, on Fastify and better-sqlite3, with Fastify's
 * own pino logger writing one line per request (as the service does) and response schemas
 * serialised by fast-json-stringify. It passes bench/checks.ts as the service and the floor do:
 * the token hashed and looked up on every request, last_used_at at most once a minute, the
 * Error body, exact int64 ids, code-point lengths, the next page's Link, nosniff, 405 with Allow.
 * Not done, as on the floor: the rate limit, `after`, `tag`, `fields`, PUT/PATCH, webhooks.
 *
 * It opens a database the service's CLI made (migrations applied, tokens issued):
 *
 *   PORT=0 HOST=127.0.0.1 DATABASE_URL=/tmp/b.sqlite DB_SYNCHRONOUS=FULL node bench/contenders/fastify/server.mjs
 *
 * Prints `listening on http://HOST:PORT` once it accepts connections. Plain JavaScript for
 * Node 20, which runs no TypeScript; installed on demand (bench/contenders/fastify.ts).
 */
import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import Fastify, { LogController } from "fastify";

const BODY_LIMIT_BYTES = 64 * 1024;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INT32_MAX = 2_147_483_647;
const LAST_USED_GRANULARITY_MS = 60_000;
const ID_RULE = `id: must be an integer between ${INT64_MIN} and ${INT64_MAX}`;

const path = (process.env.DATABASE_URL ?? "./data/plants.sqlite").replace(/^file:(\/\/)?/, "");
const synchronous = (process.env.DB_SYNCHRONOUS || "FULL").toUpperCase();
const db = new Database(path, { fileMustExist: true });
db.pragma("busy_timeout = 5000");
db.pragma("journal_mode = WAL");
db.pragma(`synchronous = ${synchronous}`);
db.pragma("foreign_keys = ON");

const findToken = db.prepare(
  "SELECT t.id, t.user_id, t.last_used_at FROM tokens t WHERE t.hash = ? AND t.revoked_at IS NULL",
);
const touchToken = db.prepare("UPDATE tokens SET last_used_at = ? WHERE id = ?");
const insertPlant = db.prepare(
  "INSERT INTO plants (owner_id, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
);
const listPlants = db
  .prepare("SELECT id, name, tag FROM plants WHERE owner_id = ? ORDER BY id LIMIT ?")
  .safeIntegers(true);
const deletePlant = db.prepare("DELETE FROM plants WHERE owner_id = ? AND id = ?");

/** An error Fastify's error handler turns into the Error body. */
class HttpError extends Error {
  constructor(statusCode, message, headers = {}) {
    super(message);
    this.statusCode = statusCode;
    this.headers = headers;
  }
}

const NO_TOKEN = () =>
  new HttpError(401, "Authentication required: send the header Authorization: Bearer <token>.", {
    "www-authenticate": "Bearer",
  });
const INVALID_TOKEN = () =>
  new HttpError(401, "The bearer token is not valid: it is unknown or has been revoked.", {
    "www-authenticate": 'Bearer error="invalid_token"',
  });

/** The caller's user id: the header only, `Bearer` in any case, the token hashed and looked up. */
function authenticate(request) {
  const match = /^bearer[ \t]+(\S.*)$/i.exec((request.headers.authorization ?? "").trim());
  if (!match) throw NO_TOKEN();
  const row = findToken.get(createHash("sha256").update(match[1].trim()).digest("hex"));
  if (row === undefined) throw INVALID_TOKEN();
  const now = Date.now();
  if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_GRANULARITY_MS) touchToken.run(now, row.id);
  request.userId = row.user_id;
  return row.user_id;
}

/**
 * The source text of the top-level `id` number (the last one, as JSON.parse keeps), read from a
 * text JSON.parse accepted: Node 20's JSON.parse rounds ids past 2^53 and gives a reviver no source.
 */
function idSource(text) {
  let depth = 0;
  let key;
  let found;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      const token = text.slice(i, end + 1);
      i = end;
      if (depth === 1 && key === undefined) key = JSON.parse(token);
      else if (depth === 1) key = undefined;
    } else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
    else if (c === ",") key = undefined;
    else if (depth === 1 && key === "id" && /[-0-9]/.test(c)) {
      const number = /^-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/.exec(text.slice(i))[0];
      found = number;
      i += number.length - 1;
    }
  }
  return found;
}

/** The exact integer a JSON number literal denotes (`7`, `7.0`, `7e0`), else undefined. */
function exactInteger(source) {
  const [, sign, whole, fraction = "", exponentText = "0"] = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(
    source,
  );
  let digits = (whole + fraction).replace(/^0+/, "");
  if (digits === "") return 0n;
  let exponent = Number(exponentText) - fraction.length;
  const zeros = /0*$/.exec(digits)[0].length;
  digits = digits.slice(0, digits.length - zeros);
  exponent += zeros;
  if (exponent < 0 || digits.length + exponent > 20) return undefined;
  const magnitude = BigInt(digits) * 10n ** BigInt(exponent);
  return sign === "-" ? -magnitude : magnitude;
}

/** A well-formed string of min..max code points. */
const isText = (value, min, max) =>
  typeof value === "string" && value.isWellFormed() && [...value].length >= min && [...value].length <= max;

/** The NewPlant in a body Fastify parsed to { text, value }. */
function newPlant(body) {
  if (body === undefined || body === null) throw new HttpError(400, "body: a JSON object is required");
  const { text, value } = body;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new HttpError(400, "body: must be a JSON object");
  }
  const source = typeof value.id === "number" ? idSource(text) : undefined;
  const id = source === undefined ? undefined : exactInteger(source);
  if (id === undefined || id < INT64_MIN || id > INT64_MAX) throw new HttpError(400, ID_RULE);
  if (!isText(value.name, 1, 256)) throw new HttpError(400, "name: must be a string of 1 to 256 characters");
  if (value.tag !== undefined && !isText(value.tag, 0, 256)) {
    throw new HttpError(400, "tag: must be a string of 0 to 256 characters");
  }
  return { id, name: value.name, tag: value.tag ?? null };
}

function idParam(text) {
  if (!/^-?[0-9]{1,19}$/.test(text)) throw new HttpError(400, ID_RULE);
  const id = BigInt(text);
  if (id < INT64_MIN || id > INT64_MAX) throw new HttpError(400, ID_RULE);
  return id;
}

function limitParam(query) {
  const limit = query.limit;
  if (limit === undefined) return undefined;
  if (typeof limit !== "string" || !/^[0-9]{1,10}$/.test(limit) || Number(limit) > INT32_MAX) {
    throw new HttpError(400, "limit: must be an integer between 0 and 2147483647");
  }
  return Number(limit);
}

const level = process.env.LOG_LEVEL || "info";
const app = Fastify({
  logger: { level },
  logController: new LogController({ disableRequestLogging: true }),
  bodyLimit: BODY_LIMIT_BYTES,
});

// JSON only (Fastify's text/plain parser removed, so anything else is its 415), kept as text
// beside its value so the id can be read exactly.
app.removeAllContentTypeParsers();
app.addContentTypeParser(/^application\/([\w.+-]+\+)?json$/i, { parseAs: "string" }, (_request, text, done) => {
  if (text === "") return done(new HttpError(400, "body: a JSON object is required"));
  try {
    done(null, { text, value: JSON.parse(text) });
  } catch {
    done(new HttpError(400, "body: must be a valid JSON document"));
  }
});

app.addHook("onSend", async (_request, reply) => {
  reply.header("x-content-type-options", "nosniff");
});
// One access line per request, as the service writes.
app.addHook("onResponse", async (request, reply) => {
  request.log.info(
    {
      method: request.method,
      route: request.routeOptions.url,
      status: reply.statusCode,
      ms: reply.elapsedTime,
      userId: request.userId,
    },
    "request",
  );
});

app.setErrorHandler((error, _request, reply) => {
  const status = error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
  const messages = {
    413: `The request body must be at most ${BODY_LIMIT_BYTES} bytes.`,
    415: "Content-Type must be application/json.",
  };
  const message =
    error instanceof HttpError
      ? error.message
      : (messages[status] ?? (status === 500 ? "Internal server error." : error.message));
  if (status === 500) reply.log.error(error);
  reply
    .code(status)
    .headers(error.headers ?? {})
    .type("application/json")
    .send(JSON.stringify({ error: status, message }));
});
app.setNotFoundHandler((_request, reply) => {
  reply
    .code(404)
    .type("application/json")
    .send(JSON.stringify({ error: 404, message: "No route matches this path." }));
});

/** A 405 for the methods a path does not take. */
function notAllowed(url, methods, allow) {
  app.route({
    method: methods,
    url,
    handler: async () => {
      throw new HttpError(405, `This path accepts only ${allow}.`, { allow });
    },
  });
}

const plantSchema = { type: "object", properties: { name: { type: "string" }, tag: { type: "string" } } };

app.get("/plants", { schema: { response: { 200: { type: "array", items: plantSchema } } } }, async (request, reply) => {
  const user = authenticate(request);
  const limit = limitParam(request.query);
  // A limited page reads one plant more: if it is there, the answer links the next page.
  const rows = listPlants.all(user, limit === undefined ? -1 : limit + 1);
  const more = limit !== undefined && rows.length > limit;
  if (more) rows.pop();
  const lastId = rows.at(-1)?.id;
  for (const row of rows) if (row.tag === null) row.tag = undefined;
  if (more) reply.header("link", `</plants?limit=${limit}&after=${lastId}>; rel="next"`);
  return rows;
});

app.post("/plants", { schema: { response: { 200: plantSchema } } }, async (request) => {
  const user = authenticate(request);
  const plant = newPlant(request.body);
  if (insertPlant.run(user, plant.id, plant.name, plant.tag).changes === 0) {
    throw new HttpError(409, "id: you already have a plant with this id; delete it first to replace it");
  }
  return plant.tag === null ? { name: plant.name } : { name: plant.name, tag: plant.tag };
});

app.delete("/plants/:id", async (request, reply) => {
  const user = authenticate(request);
  if (deletePlant.run(user, idParam(request.params.id)).changes === 0) {
    throw new HttpError(404, "id: you have no plant with this id");
  }
  reply.code(204).send();
});

app.get("/healthz", async () => ({ status: "ok" }));
notAllowed("/plants", ["PUT", "PATCH", "DELETE", "OPTIONS"], "GET, POST");
notAllowed("/plants/:id", ["GET", "POST", "PUT", "PATCH", "OPTIONS"], "DELETE");

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST || "127.0.0.1";
await app.listen({ port, host });
console.log(`listening on http://${host}:${app.server.address().port}`);

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, async () => {
    await app.close();
    db.pragma("wal_checkpoint(TRUNCATE)");
    db.close();
    process.exit(0);
  });
}
