/**
 * Hostile input, property-based: whatever a client sends, the answer is a clean 4xx with the
 * Error body (or a success the SPEC allows), never a 5xx, never a hang; a refused request
 * leaves the stored plants byte-for-byte as they were, and the service keeps answering.
 *
 * Known findings have their own example-based tests below ("Finding:" comments), and the
 * properties step around their triggers (a literal "#" in a URL; Bun's bare 505 to a request
 * line it cannot parse), so a property keeps looking for new problems instead of finding the
 * same one every run.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import fc from "fast-check";
import { makeTestApp, onSqlite, type TestApp } from "../support/helpers";
import {
  allowedCreateOutcomes,
  almostJsonText,
  authorizationParts,
  authorizationValue,
  BODY_LIMIT,
  type CreateOutcome,
  contentType,
  extraHeaders,
  headerAccepted,
  hostileBytes,
  hostileJsonText,
  httpMethod,
  INT64_MAX,
  INT64_MIN,
  latin1String,
  limitReadings,
  mediaTypeOf,
  paddedLimit,
  plantBody,
  plantFromJsonText,
  queryNamesRefused,
  queryParams,
  queryString,
  randomPath,
  type StoredPlant,
  utf8Bytes,
  validLimit,
} from "../support/hostile-arbitraries";
import { type RunningServer, scratchDir, startServer } from "../support/process";

const REQUEST_TIMEOUT_MS = 2000;
/** Runs per property: the whole file stays well under 20 s on two cores. HOSTILE_RUNS=5000 digs deeper. */
const RUNS = Number(process.env.HOSTILE_RUNS) || 300;
/** Deeper runs take longer than the suite's default test timeout. */
const PROPERTY_TIMEOUT_MS = Math.max(30_000, RUNS * 60);

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const clip = (text: string, max = 200) => (text.length > max ? `${text.slice(0, max)}…(${text.length} chars)` : text);

class PropertyFailure extends Error {}
function check(condition: unknown, message: () => string): asserts condition {
  if (!condition) throw new PropertyFailure(message());
}

// ---------------------------------------------------------------------------------------------
// The in-process world: a fresh app, two users, a few plants
// ---------------------------------------------------------------------------------------------

interface World {
  t: TestApp;
  token: string;
  aliceId: number;
}

const SEEDED: Array<{ owner: "alice" | "bob"; text: string }> = [
  { owner: "alice", text: '{"id":1,"name":"Fern","tag":"green"}' },
  { owner: "alice", text: '{"id":2,"name":"Cactus"}' },
  { owner: "alice", text: '{"id":-5,"name":"Ivy","tag":""}' },
  { owner: "alice", text: '{"id":9007199254740993,"name":"Big 2^53+1"}' },
  { owner: "alice", text: '{"id":9223372036854775807,"name":"Max","tag":"🌵"}' },
  { owner: "alice", text: '{"id":-9223372036854775808,"name":"Min \\u0001 soh"}' },
  { owner: "bob", text: '{"id":1,"name":"Bob\'s rose"}' },
  { owner: "bob", text: '{"id":3,"name":"Bob\'s oak","tag":"tree"}' },
];

async function makeWorld(): Promise<World> {
  const t = await makeTestApp();
  const token = await t.tokenFor("alice");
  const bobToken = await t.tokenFor("bob");
  for (const { owner, text } of SEEDED) {
    const response = await t.call("POST", "/plants", { token: owner === "alice" ? token : bobToken, json: text });
    expect(response.status).toBe(200);
  }
  const alice = t.sqlite.query("SELECT id FROM users WHERE name = 'alice'").get() as { id: number };
  return { t, token, aliceId: alice.id };
}

/** Every stored byte of every plant, one string per row (owner, exact id, name, tag). */
function snapshot({ t }: World): string[] {
  return (
    t.sqlite
      .query(
        "SELECT owner_id, CAST(id AS TEXT) AS id, hex(name) AS name, hex(tag) AS tag, tag IS NULL AS no_tag FROM plants ORDER BY 1, 2",
      )
      .all() as Array<Record<string, unknown>>
  ).map((row) => JSON.stringify(row));
}

function ownedIds(world: World): Set<string> {
  const rows = world.t.sqlite
    .query("SELECT CAST(id AS TEXT) AS id FROM plants WHERE owner_id = ?")
    .all(world.aliceId) as Array<{ id: string }>;
  return new Set(rows.map((row) => row.id));
}

/** Alice's plants as GET /plants must show them. */
function expectedList(world: World): Array<{ name: string; tag?: string }> {
  const rows = world.t.sqlite
    .query("SELECT name, tag FROM plants WHERE owner_id = ? ORDER BY id")
    .all(world.aliceId) as Array<{ name: string; tag: string | null }>;
  return rows.map((row) => (row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag }));
}

const hex = (text: string) => Buffer.from(text, "utf8").toString("hex").toUpperCase();

const rowOf = (ownerId: number, plant: StoredPlant) =>
  JSON.stringify({
    owner_id: ownerId,
    id: String(plant.id),
    name: hex(plant.name),
    tag: plant.tag === undefined ? "" : hex(plant.tag),
    no_tag: plant.tag === undefined ? 1 : 0,
  });

interface Answer {
  status: number;
  text: string;
  headers: Headers;
  json: unknown;
}

/** A short description of a request for failure messages. */
function describeRequest(request: Request, body?: string | Uint8Array): string {
  const headers = [...request.headers].map(([k, v]) => `${k}: ${clip(v, 80)}`).join(" | ");
  const shownBody =
    body === undefined
      ? ""
      : typeof body === "string"
        ? clip(JSON.stringify(body))
        : `bytes[${[...body.slice(0, 40)]}]`;
  return `${request.method} ${clip(request.url, 160)} {${headers}} ${shownBody}`;
}

/**
 * Sends one request to the app under a timeout and checks what holds for every answer:
 * below 500; an error is application/json `{error: status, message}`; a 401 says
 * WWW-Authenticate: Bearer; a 405 names an Allow list without the method it refused.
 * Nothing may have been logged as a fault.
 */
async function send(world: World, request: Request, body?: string | Uint8Array): Promise<Answer> {
  const what = describeRequest(request, body);
  const loggedBefore = world.t.logged.length;
  const response = await withTimeout(world.t.app.handle(request), REQUEST_TIMEOUT_MS, what);
  const text = await withTimeout(response.text(), REQUEST_TIMEOUT_MS, `body of ${what}`);
  const status = response.status;
  const answer = `${status} ${clip(text)}`;
  check(status < 500, () => `5xx for ${what}\n  -> ${answer}`);
  check(status >= 200, () => `status ${status} for ${what}`);
  check(world.t.logged.length === loggedBefore, () => `a fault was logged for ${what}\n  -> ${answer}`);
  let json: unknown;
  if (status >= 400 && request.method !== "HEAD") {
    const type = response.headers.get("content-type") ?? "";
    check(mediaTypeOf(type) === "application/json", () => `error without application/json (${type}) for ${what}`);
    try {
      json = JSON.parse(text);
    } catch {
      check(false, () => `error body is not JSON for ${what}\n  -> ${answer}`);
    }
    const error = json as Record<string, unknown>;
    check(
      typeof error === "object" &&
        error !== null &&
        Object.keys(error).sort().join(",") === "error,message" &&
        error.error === status &&
        typeof error.message === "string" &&
        error.message.trim() !== "",
      () => `not the Error body for ${what}\n  -> ${answer}`,
    );
    if (status === 401) {
      check(
        /^Bearer\b/.test(response.headers.get("www-authenticate") ?? ""),
        () => `401 without WWW-Authenticate: Bearer for ${what}`,
      );
    }
    if (status === 405) {
      const allow = (response.headers.get("allow") ?? "").split(",").map((m) => m.trim());
      check(
        allow.length > 0 && allow[0] !== "" && !allow.includes(request.method),
        () => `405 whose Allow (${allow.join(", ")}) lists the method refused, for ${what}`,
      );
    }
  } else if (status === 200 && request.method !== "HEAD" && text !== "") {
    try {
      json = JSON.parse(text);
    } catch {}
  }
  return { status, text, headers: response.headers, json };
}

/** A valid Authorization header plus `extra`; an undefined value leaves that header out. */
function authHeaders(world: World, extra: Record<string, string | undefined> = {}): Record<string, string> {
  const headers: Record<string, string> = { authorization: `Bearer ${world.token}` };
  for (const [name, value] of Object.entries(extra)) if (value !== undefined) headers[name] = value;
  return headers;
}

function postPlants(body: string | Uint8Array, headers: Record<string, string | undefined>) {
  const init = new Headers();
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) init.set(name, value);
  return new Request("http://localhost/plants", { method: "POST", headers: init, body });
}

/** After a property: the service still answers a normal request with alice's plants. */
async function stillServes(world: World) {
  const request = new Request("http://localhost/plants", { headers: authHeaders(world) });
  const answer = await send(world, request);
  expect(answer.status).toBe(200);
  expect(answer.json).toEqual(expectedList(world));
  for (const { text, owner } of SEEDED) {
    if (owner !== "alice") continue;
    const id = String(JSON.parse(text, (k, v, c?: { source?: string }) => (k === "id" ? c?.source : v)).id);
    expect(ownedIds(world).has(id)).toBe(true);
  }
}

/**
 * A create request's outcome against the allowed ones: a refusal changes nothing; a 200
 * stores exactly one of the allowed plants, and echoes its name and tag.
 */
function checkCreate(
  world: World,
  before: string[],
  answer: Answer,
  allowed: CreateOutcome[],
  what: () => string,
  extraStatuses: number[] = [],
) {
  const after = snapshot(world);
  const statuses = new Set([...allowed.map((o) => o.status), ...extraStatuses]);
  check(
    statuses.has(answer.status as CreateOutcome["status"]),
    () => `status ${answer.status} (${clip(answer.text)}) not among [${[...statuses].join(", ")}] for ${what()}`,
  );
  if (answer.status !== 200) {
    check(
      JSON.stringify(after) === JSON.stringify(before),
      () => `rejected (${answer.status}) but the plants changed, for ${what()}`,
    );
    return;
  }
  const added = after.filter((row) => !before.includes(row));
  const removed = before.filter((row) => !after.includes(row));
  check(
    added.length === 1 && removed.length === 0,
    () => `200 but rows added ${added.length}, removed ${removed.length}, for ${what()}`,
  );
  const match = allowed.find((o) => o.status === 200 && rowOf(world.aliceId, o.plant) === added[0]);
  check(match?.plant, () => `200 stored ${added[0]}, which is none of the allowed plants, for ${what()}`);
  const expected = match.plant.tag === undefined ? { name: match.plant.name } : match.plant;
  check(
    JSON.stringify(answer.json) ===
      JSON.stringify({ name: expected.name, ...(match.plant.tag === undefined ? {} : { tag: match.plant.tag }) }),
    () => `200 body ${clip(answer.text)} is not the stored plant, for ${what()}`,
  );
}

/** For bodies whose only reading is plain JSON.parse (no duplicate keys). */
function allowedForJsonText(text: string, owned: Set<string>, byteLength: number): CreateOutcome[] {
  if (byteLength > BODY_LIMIT) return [{ status: 413 }];
  const found = plantFromJsonText(text);
  if (!found) return [{ status: 400 }];
  const outcomes: CreateOutcome[] = found.either ? [{ status: 400 }] : [];
  outcomes.push(owned.has(String(found.plant.id)) ? { status: 409 } : { status: 200, plant: found.plant });
  return outcomes;
}

/**
 * The outcomes allowed for a JSON-typed body of raw bytes: invalid UTF-8 or no body is a 400;
 * a UTF-8 byte order mark may be skipped or refused; nesting thousands deep may be refused.
 */
function allowedForBytes(bytes: Uint8Array, owned: Set<string>): { allowed: CreateOutcome[]; extra: number[] } {
  if (bytes.byteLength > BODY_LIMIT) return { allowed: [{ status: 413 }], extra: [] };
  if (bytes.byteLength === 0) return { allowed: [{ status: 400 }], extra: [] };
  const text = decodeUtf8(bytes);
  if (text === undefined) return { allowed: [{ status: 400 }], extra: [] };
  let allowed = allowedForJsonText(text, owned, bytes.byteLength);
  if (text.startsWith("\ufeff")) allowed = [...allowed, ...allowedForJsonText(text.slice(1), owned, bytes.byteLength)];
  return { allowed, extra: /[[{]{1000}/.test(text) ? [400] : [] };
}

function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// In-process properties
// ---------------------------------------------------------------------------------------------

describe.if(onSqlite)("hostile input, in process", () => {
  test(
    "POST /plants: plant-shaped raw JSON with duplicate keys, __proto__ keys, huge numbers, odd strings, deep nesting",
    async () => {
      const world = await makeWorld();
      await fc.assert(
        fc.asyncProperty(plantBody, async (body) => {
          const before = snapshot(world);
          const allowed = allowedCreateOutcomes(body, ownedIds(world));
          const request = postPlants(body.text, authHeaders(world, { "content-type": "application/json" }));
          const answer = await send(world, request, body.text);
          checkCreate(world, before, answer, allowed, () => clip(body.text, 400));
          // A validation message names the field and the rule, never the input.
          for (const field of body.fields) {
            if (field.deep || !field.valueText.startsWith('"')) continue;
            const value = JSON.parse(field.valueText) as string;
            if (answer.status >= 400 && value.length >= 16 && /[^0-9-]/.test(value)) {
              check(!answer.text.includes(value), () => `the error echoes the input ${clip(value)}`);
            }
          }
        }),
        { numRuns: RUNS * 2 },
      );
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "POST /plants: random bytes, invalid UTF-8, any JSON value, almost-JSON",
    async () => {
      const world = await makeWorld();
      const body = fc.oneof(
        hostileBytes,
        hostileJsonText,
        almostJsonText,
        hostileJsonText.map((text) => utf8Bytes(text)),
      );
      await fc.assert(
        fc.asyncProperty(body, async (payload) => {
          const before = snapshot(world);
          const bytes = typeof payload === "string" ? utf8Bytes(payload) : payload;
          const { allowed, extra } = allowedForBytes(bytes, ownedIds(world));
          const request = postPlants(payload, authHeaders(world, { "content-type": "application/json" }));
          const answer = await send(world, request, payload);
          checkCreate(world, before, answer, allowed, () => describeRequest(request, payload), extra);
        }),
        { numRuns: RUNS * 2 },
      );
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "POST /plants: wrong, odd and missing Content-Type with valid and invalid bodies",
    async () => {
      const world = await makeWorld();
      let nextId = 10_000n;
      const body = fc.oneof(
        { arbitrary: fc.constant("valid"), weight: 15 },
        { arbitrary: hostileBytes, weight: 5 },
        { arbitrary: almostJsonText, weight: 5 },
        { arbitrary: fc.constant("huge"), weight: 1 },
      );
      await fc.assert(
        fc.asyncProperty(contentType, body, async (type, kind) => {
          const before = snapshot(world);
          const id = nextId++;
          const payload =
            kind === "valid"
              ? utf8Bytes(`{"id":${id},"name":"Typed ${id}"}`)
              : kind === "huge"
                ? utf8Bytes(`{"id":${id},"name":"${"z".repeat(BODY_LIMIT)}"}`)
                : typeof kind === "string"
                  ? utf8Bytes(kind)
                  : kind;
          const media = mediaTypeOf(type);
          const isJson = media === "application/json";
          const jsonish = /^application\/([\w.+-]+\+)?json$/.test(media);
          let { allowed, extra } = allowedForBytes(payload, ownedIds(world));
          const request = postPlants(payload, authHeaders(world, { "content-type": type }));
          const answer = await send(world, request, payload);
          const what = () => describeRequest(request, payload);
          if (kind === "valid") {
            const exactJson = isJson && /^application\/json(\s*;\s*charset=utf-8)?$/i.test((type ?? "").trim());
            // Only the plain JSON media type is owed a 200; another +json one may also be refused.
            if (!exactJson) allowed = [...allowed, { status: 400 }];
          }
          if (!jsonish) allowed = allowed.filter((o) => o.status !== 200 && o.status !== 409);
          if (allowed.length === 0 || (!jsonish && payload.byteLength <= BODY_LIMIT))
            allowed = [...allowed, { status: 400 }];
          // SPEC: "A content type other than JSON: 415 (or 400)". A JSON one must not get 415.
          if (!isJson && payload.byteLength <= BODY_LIMIT) extra = [...extra, 415];
          if (isJson && payload.byteLength > 0 && payload.byteLength <= BODY_LIMIT) {
            check(answer.status !== 415, () => `415 for a JSON content type: ${what()}`);
          }
          checkCreate(world, before, answer, allowed, what, extra);
        }),
        { numRuns: RUNS },
      );
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "POST /plants without a valid token: 401 (or 413) whatever the body, nothing stored",
    async () => {
      const world = await makeWorld();
      const body = fc.oneof(
        hostileBytes,
        hostileJsonText,
        almostJsonText,
        plantBody.map((b) => b.text),
      );
      const auth = fc.oneof(
        fc.constant(undefined),
        fc.constantFrom("Bearer", "Bearer ", "Basic abc", "Bearer pst_nope", `Bearer ${"x".repeat(5000)}`),
        latin1String(30).filter((v) => headerAccepted("authorization", v)),
      );
      await fc.assert(
        fc.asyncProperty(body, auth, contentType, async (payload, authorization, type) => {
          const before = snapshot(world);
          const request = postPlants(payload, { authorization, "content-type": type ?? "application/json" });
          const answer = await send(world, request, payload);
          const size = typeof payload === "string" ? utf8Bytes(payload).byteLength : payload.byteLength;
          const allowed = size > BODY_LIMIT ? [401, 413] : [401];
          check(
            allowed.includes(answer.status),
            () => `${answer.status} ${clip(answer.text)} for ${describeRequest(request, payload)}`,
          );
          check(JSON.stringify(snapshot(world)) === JSON.stringify(before), () => "plants changed without a token");
        }),
        { numRuns: RUNS },
      );
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "GET /plants: arbitrary limit values, repeated or unknown params (400), percent-encoding garbage",
    async () => {
      const world = await makeWorld();
      await fc.assert(
        fc.asyncProperty(queryParams, async (params) => {
          const before = snapshot(world);
          const request = new Request(`http://localhost/plants?${queryString(params)}`, {
            headers: authHeaders(world),
          });
          const what = () => describeRequest(request);
          const answer = await send(world, request);
          check(JSON.stringify(snapshot(world)) === JSON.stringify(before), () => `GET changed the plants: ${what()}`);
          const search = new URL(request.url).search.slice(1);
          if (queryNamesRefused(search)) {
            check(answer.status === 400, () => `${answer.status} ${clip(answer.text)} for ${what()}`);
            return;
          }
          const readings = limitReadings(search);
          const list = expectedList(world);
          const allowedCounts = new Set<number>();
          let mayRefuse = false;
          if (readings.length === 0) allowedCounts.add(list.length);
          if (readings.length > 1) mayRefuse = true;
          for (const candidates of readings) {
            for (const value of candidates) {
              if (validLimit(value)) allowedCounts.add(Math.min(Number(value), list.length));
              else if (paddedLimit(value)) {
                allowedCounts.add(Math.min(Number(value), list.length));
                mayRefuse = true;
              } else mayRefuse = true;
            }
          }
          if (answer.status === 200) {
            check(
              Array.isArray(answer.json) && allowedCounts.has(answer.json.length),
              () => `200 with ${clip(answer.text)}; allowed counts [${[...allowedCounts]}], for ${what()}`,
            );
            const items = answer.json as unknown[];
            check(
              JSON.stringify(items) === JSON.stringify(list.slice(0, items.length)),
              () => `200 but not the first plants by id: ${clip(answer.text)} for ${what()}`,
            );
          } else {
            check(answer.status === 400 && mayRefuse, () => `${answer.status} ${clip(answer.text)} for ${what()}`);
            check(
              /limit/.test((answer.json as { message: string }).message),
              () => `400 without naming limit: ${clip(answer.text)}`,
            );
          }
        }),
        { numRuns: RUNS * 2 },
      );
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "any method on random paths, /plants/<random segment> included",
    async () => {
      const world = await makeWorld();
      let nextId = 20_000n;
      await fc.assert(
        fc.asyncProperty(httpMethod, randomPath, fc.boolean(), async (method, path, withBody) => {
          let request: Request;
          const id = nextId++;
          const body =
            withBody && method !== "GET" && method !== "HEAD" ? `{"id":${id},"name":"Path ${id}"}` : undefined;
          try {
            request = new Request(`http://localhost${path}`, {
              method,
              headers: authHeaders(world, body ? { "content-type": "application/json" } : {}),
              body,
            });
          } catch {
            return; // the runtime refuses to build it (e.g. TRACE): not the server's business
          }
          const before = snapshot(world);
          const owned = ownedIds(world);
          const list = expectedList(world);
          const what = () => describeRequest(request, body);
          const answer = await send(world, request, body);
          const after = snapshot(world);
          const pathname = new URL(request.url).pathname;
          // Bun's Request turns unknown methods into GET; judge by what the app was given.
          const sent = request.method;
          const onList = /^\/plants\/?$/.test(pathname);
          const one = /^\/plants\/([^/]+)\/?$/.exec(pathname);
          const segment = one?.[1];
          const decodedIds = segment === undefined ? [] : [segment, safeDecode(segment)].filter((s) => s !== undefined);
          const idOf = (s: string) =>
            /^-?[0-9]{1,20}$/.test(s) && BigInt(s) >= INT64_MIN && BigInt(s) <= INT64_MAX
              ? String(BigInt(s))
              : undefined;

          if (answer.status >= 200 && answer.status < 300) {
            if (pathname.startsWith("/swagger")) {
              check(sent === "GET" || sent === "HEAD", () => `${answer.status} for ${what()}`);
            } else if (onList && (sent === "GET" || sent === "HEAD")) {
              if (sent === "GET") {
                // With a query, `limit` may shorten the list (the GET /plants property checks how).
                const shown = Array.isArray(answer.json) ? answer.json : [];
                const expected = new URL(request.url).search === "" ? list : list.slice(0, shown.length);
                check(JSON.stringify(answer.json) === JSON.stringify(expected), () => `wrong list for ${what()}`);
              }
            } else if (one && (sent === "GET" || sent === "HEAD")) {
              const ids = decodedIds.map(idOf).filter((s) => s !== undefined && owned.has(s));
              check(
                answer.status === 200 && ids.length > 0,
                () => `${answer.status} ${clip(answer.text)} for ${what()}`,
              );
              if (sent === "GET") {
                const plant = answer.json as { name?: unknown };
                check(typeof plant?.name === "string", () => `200 without a plant: ${clip(answer.text)} for ${what()}`);
              }
            } else if (onList && sent === "POST") {
              check(body !== undefined && answer.status === 200, () => `${answer.status} for ${what()}`);
              checkCreate(
                world,
                before,
                answer,
                [{ status: 200, plant: { id, name: `Path ${id}`, tag: undefined } }],
                what,
              );
              return;
            } else if (one && sent === "DELETE") {
              const ids = decodedIds.map(idOf).filter((s) => s !== undefined && owned.has(s));
              check(
                answer.status === 204 && answer.text === "" && ids.length > 0,
                () => `${answer.status} ${clip(answer.text)} for ${what()}`,
              );
              const removed = before.filter((row) => !after.includes(row));
              check(
                removed.length === 1 &&
                  after.length === before.length - 1 &&
                  ids.some((i) => removed[0]?.includes(`"id":"${i}"`)),
                () => `204 but removed ${JSON.stringify(removed)} for ${what()}`,
              );
              // Put the plant back, through the API, so later runs keep hitting seeded ids.
              const row = JSON.parse(removed[0] as string) as { id: string; name: string; tag: string; no_tag: number };
              const name = Buffer.from(row.name, "hex").toString("utf8");
              const tag = row.no_tag ? undefined : Buffer.from(row.tag, "hex").toString("utf8");
              const text = `{"id":${row.id},"name":${JSON.stringify(name)}${tag === undefined ? "" : `,"tag":${JSON.stringify(tag)}`}}`;
              const again = await send(
                world,
                postPlants(text, authHeaders(world, { "content-type": "application/json" })),
              );
              check(again.status === 200, () => `could not re-create ${text}: ${again.status}`);
              check(JSON.stringify(snapshot(world)) === JSON.stringify(before), () => "re-created plant differs");
              return;
            } else {
              check(false, () => `${answer.status} ${clip(answer.text)} for ${what()}`);
            }
          }
          check(
            JSON.stringify(after) === JSON.stringify(before),
            () => `${answer.status} but plants changed, for ${what()}`,
          );
          // GET and DELETE /plants/<plain decimal id>: 200 / 204 when owned, 404 when not.
          if ((sent === "DELETE" || sent === "GET") && segment !== undefined && /^-?[0-9]+$/.test(segment)) {
            const plain = idOf(segment);
            const found = sent === "GET" ? 200 : 204;
            const expected = plain === undefined ? 400 : owned.has(plain) ? found : 404;
            check(answer.status === expected, () => `${answer.status} (expected ${expected}) for ${what()}`);
          }
        }),
        { numRuns: RUNS * 2 },
      );
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "random Authorization headers: 200 only for the real bearer token, else 401 without echoing it",
    async () => {
      const world = await makeWorld();
      await fc.assert(
        fc.asyncProperty(authorizationParts, async (parts) => {
          const { value, token, mustSucceed, mayPass } = authorizationValue(parts, world.token);
          let request: Request;
          try {
            request = new Request("http://localhost/plants", { headers: { authorization: value } });
          } catch {
            return; // `new Headers()` refuses it: the runtime's rule, not the server's
          }
          const before = snapshot(world);
          const answer = await send(world, request);
          const what = () => `authorization ${JSON.stringify(clip(value, 120))}`;
          check(JSON.stringify(snapshot(world)) === JSON.stringify(before), () => `plants changed for ${what()}`);
          if (mustSucceed) check(answer.status === 200, () => `${answer.status} ${clip(answer.text)} for ${what()}`);
          if (answer.status === 200) {
            check(mayPass, () => `200 for ${what()}`);
            check(
              JSON.stringify(answer.json) === JSON.stringify(expectedList(world)),
              () => `wrong list for ${what()}`,
            );
            return;
          }
          check(answer.status === 401, () => `${answer.status} ${clip(answer.text)} for ${what()}`);
          for (const secret of [world.token, token.trim()]) {
            if (secret.length >= 8) check(!answer.text.includes(secret), () => `401 echoes the token for ${what()}`);
          }
          // A Bearer scheme with a token that is not valid says so.
          if (
            /^bearer$/i.test(parts.scheme) &&
            / /.test(parts.separator) &&
            /^ +$/.test(parts.separator) &&
            token.trim() !== ""
          ) {
            check(
              /invalid_token/.test(answer.headers.get("www-authenticate") ?? ""),
              () => `401 without error="invalid_token" for ${what()}`,
            );
          }
        }),
        { numRuns: RUNS * 2 },
      );
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "random extra headers on GET and POST /plants",
    async () => {
      const world = await makeWorld();
      let nextId = 30_000n;
      await fc.assert(
        fc.asyncProperty(fc.constantFrom("GET", "POST"), extraHeaders, async (method, extras) => {
          const id = nextId++;
          const body = method === "POST" ? `{"id":${id},"name":"Header ${id}"}` : undefined;
          const headers = new Headers(authHeaders(world, body ? { "content-type": "application/json" } : {}));
          for (const [name, value] of extras) headers.append(name, value);
          let request: Request;
          try {
            request = new Request("http://localhost/plants", { method, headers, body });
          } catch {
            return;
          }
          const before = snapshot(world);
          const list = expectedList(world);
          const what = () => describeRequest(request, body);
          const answer = await send(world, request, body);
          if (answer.status >= 200 && answer.status < 300) {
            if (method === "GET") {
              check(JSON.stringify(answer.json) === JSON.stringify(list), () => `wrong list for ${what()}`);
              check(JSON.stringify(snapshot(world)) === JSON.stringify(before), () => `GET changed plants: ${what()}`);
            } else {
              checkCreate(
                world,
                before,
                answer,
                [{ status: 200, plant: { id, name: `Header ${id}`, tag: undefined } }],
                what,
              );
            }
          } else {
            check(
              JSON.stringify(snapshot(world)) === JSON.stringify(before),
              () => `${answer.status} but plants changed: ${what()}`,
            );
          }
        }),
        { numRuns: RUNS },
      );
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "example: a huge id, a 100k-character name, a lone surrogate, a NUL",
    async () => {
      const world = await makeWorld();
      const cases: Array<[string, number[]]> = [
        ['{"id":1e400,"name":"a"}', [400]],
        ['{"id":-1e400,"name":"a"}', [400]],
        ['{"id":1e-400,"name":"a"}', [400]],
        ['{"id":123456789012345678901234567890,"name":"a"}', [400]],
        ['{"id":9223372036854775808,"name":"a"}', [400]],
        [`{"id":${"9".repeat(60_000)},"name":"a"}`, [400]],
        [`{"id":50,"name":"${"n".repeat(100_000)}"}`, [400, 413]],
        ['{"id":51,"name":"\\ud800"}', [400]],
        ['{"id":52,"name":"a","tag":"\\udfff"}', [400]],
        ['{"id":53,"name":"a\\u0000b"}', [400]], // PostgreSQL's text cannot hold U+0000: refused on both engines
        ['{"id":54,"name":"\u0000"}', [400]], // a raw control character: not JSON
      ];
      for (const [text, statuses] of cases) {
        const before = snapshot(world);
        const answer = await send(
          world,
          postPlants(text, authHeaders(world, { "content-type": "application/json" })),
          text,
        );
        check(statuses.includes(answer.status), () => `${answer.status} ${clip(answer.text)} for ${clip(text)}`);
        if (answer.status !== 200) expect(snapshot(world)).toEqual(before);
        else expect(answer.json).toEqual({ name: JSON.parse(text).name });
      }
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  test(
    "example: oversized query strings, paths, header and parameter counts answer promptly",
    async () => {
      const world = await makeWorld();
      const get = (path: string, headers: Headers = new Headers(authHeaders(world))) =>
        send(world, new Request(`http://localhost${path}`, { headers }));
      const many = (count: number, part: (i: number) => string) =>
        Array.from({ length: count }, (_, i) => part(i)).join("&");
      const before = snapshot(world);
      const list = expectedList(world);
      expect((await get(`/plants?${many(20_000, (i) => `a${i}=1`)}`)).status).toBe(400);
      expect((await get(`/plants?${many(20_000, () => "limit=1")}`)).status).toBeOneOf([200, 400]);
      expect((await get(`/plants?a${"[b]".repeat(20_000)}=1`)).status).toBe(400);
      expect((await get(`/plants?limit${"[b]".repeat(20_000)}=1`)).status).toBeOneOf([200, 400]);
      expect((await get(`/plants?x=${"%zz".repeat(300_000)}`)).status).toBe(400);
      expect((await get(`/plants?tag=${"%zz".repeat(300_000)}`)).status).toBe(400);
      expect((await get(`/plants?limit=${"1".repeat(1_000_000)}`)).status).toBe(400);
      expect((await get(`/${"a/".repeat(300_000)}`)).status).toBe(404);
      expect((await get(`/plants${"/".repeat(300_000)}`)).status).toBeLessThan(500);
      const del = await send(
        world,
        new Request(`http://localhost/plants/${"1".repeat(1_000_000)}`, {
          method: "DELETE",
          headers: authHeaders(world),
        }),
      );
      expect(del.status).toBe(400);
      const headers = new Headers(authHeaders(world));
      for (let i = 0; i < 5000; i++) headers.append(`x-h${i}`, "v");
      for (let i = 0; i < 5000; i++) headers.append("cookie", `c${i}=%zz`);
      expect((await get("/plants", headers)).json).toEqual(list);
      expect(snapshot(world)).toEqual(before);
      await stillServes(world);
    },
    PROPERTY_TIMEOUT_MS,
  );

  // A request URL keeps its fragment and Elysia would route on it; "#" is refused outright so
  // that DELETE /plants/1#2 can never delete plant 1.
  test("a fragment in the URL is a 400 that says to percent-encode it", async () => {
    const world = await makeWorld();
    for (const method of ["GET", "DELETE"]) {
      const answer = await send(
        world,
        new Request("http://localhost/plants/1#2", { method, headers: authHeaders(world) }),
      );
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({
        error: 400,
        message: "The request target must not contain '#'; percent-encode it as %23.",
      });
    }
    await stillServes(world);
  });
});

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The real server, over raw TCP: what fetch cannot send
// ---------------------------------------------------------------------------------------------

interface RawExchange {
  /** Status codes of the responses received, in order. */
  statuses: number[];
  /** Statuses of the responses the app never saw: Bun's HTTP parser answers them, bare. */
  parserStatuses: number[];
  raw: string;
  closed: boolean;
}

/**
 * Writes `chunks` to a fresh connection and collects what comes back until `expected` complete
 * responses arrived, the server closed the connection, or `ms` passed. `halfClose` ends the
 * writing side after the chunks; `abort` destroys the socket right after writing.
 */
function exchange(
  url: string,
  chunks: Array<string | Uint8Array>,
  { expected = 1, ms = 1500, halfClose = false, abort = false } = {},
): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    let settled = false;
    let socket: Socket | undefined;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket?.destroy();
      const responses = parseResponses(received);
      resolve({
        statuses: responses.map((r) => r.status),
        parserStatuses: responses.filter((r) => r.bare).map((r) => r.status),
        raw: received.toString("latin1"),
        closed,
      });
    };
    const timer = setTimeout(() => finish(false), ms);
    const open = connect({ host: hostname, port: Number(port) }, () => {
      for (const chunk of chunks) open.write(chunk);
      if (halfClose) open.end();
      if (abort) setTimeout(() => finish(true), 50);
    });
    socket = open;
    open.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (parseResponses(received).length >= expected) finish(false);
    });
    open.on("close", () => finish(true));
    open.on("error", (error) => {
      if (!settled && received.length === 0 && (error as NodeJS.ErrnoException).code === "ECONNREFUSED") {
        settled = true;
        clearTimeout(timer);
        reject(error);
      }
    });
  });
}

/**
 * The complete (Content-Length framed) responses in `data`. `bare` marks a response that did
 * not come from the app: every app response carries X-Content-Type-Options.
 */
function parseResponses(data: Buffer): Array<{ status: number; bare: boolean }> {
  const text = data.toString("latin1");
  const statuses: Array<{ status: number; bare: boolean }> = [];
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf("\r\n\r\n", at);
    if (end < 0) break;
    const head = text.slice(at, end);
    const status = /^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1];
    if (!status) break;
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (text.length < end + 4 + length) break;
    statuses.push({ status: Number(status), bare: !/\r\nx-content-type-options:/i.test(head) });
    at = end + 4 + length;
  }
  return statuses;
}

describe.if(onSqlite)("hostile bytes over TCP, real server", () => {
  let server: RunningServer;
  let cleanup: () => void;
  let token: string;
  let auth: string;
  let seeded: unknown;

  beforeAll(async () => {
    const scratch = scratchDir();
    cleanup = scratch.cleanup;
    server = await startServer({ DATABASE_URL: `${scratch.dir}/hostile.sqlite`, RATE_LIMIT_PER_MINUTE: "0" });
    token = server.startupOutput.split("\n").find((line) => line.startsWith("pst_")) ?? "";
    expect(token).toStartWith("pst_");
    auth = `Authorization: Bearer ${token}\r\n`;
    for (const body of ['{"id":1,"name":"Fern"}', '{"id":9223372036854775807,"name":"Max","tag":"t"}']) {
      const response = await fetch(`${server.url}/plants`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body,
      });
      expect(response.status).toBe(200);
    }
    seeded = await listPlants();
  });

  afterAll(async () => {
    if (server) {
      const code = await withTimeout(server.stop(), 15_000, "server shutdown");
      const output = await server.output();
      cleanup?.();
      expect(code).toBe(0);
      // Aborted bodies must not leave requests "in flight", and nothing may have faulted.
      expect(output).not.toContain("still in flight");
      expect(output).not.toMatch(/unhandled/i);
    } else cleanup?.();
  });

  async function listPlants() {
    const response = await withTimeout(
      fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${token}` } }),
      3000,
      "GET /plants",
    );
    expect(response.status).toBe(200);
    return response.json();
  }

  async function expectAlive() {
    const exited = await Promise.race([
      server.exited.then((code) => `exited ${code}`),
      Bun.sleep(20).then(() => "alive"),
    ]);
    expect(exited).toBe("alive");
    expect(await listPlants()).toEqual(seeded);
  }

  test("garbage request lines get a 4xx or a closed connection, never a 5xx", async () => {
    const lines: Array<string | Uint8Array> = [
      "\x00\x01\x02\r\n\r\n",
      "GARBAGE\r\n\r\n",
      "GET\r\n\r\n",
      " GET /plants HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET  /plants  HTTP/1.1\r\nHost: x\r\n\r\n",
      "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
      new Uint8Array([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0x0d, 0x0a, 0x0d, 0x0a]), // a TLS hello
      `${"A".repeat(20_000)} /plants HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /${"p".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\n${auth}X-Big: ${"b".repeat(40_000)}\r\n\r\n`,
    ];
    for (const line of lines) {
      const result = await exchange(server.url, [line], { halfClose: true });
      expect({ line: clip(String(line), 60), fiveXX: result.statuses.filter((s) => s >= 500) }).toEqual({
        line: clip(String(line), 60),
        fiveXX: [],
      });
    }
    await expectAlive();
  });

  test("random request lines and header bytes never get a 5xx", async () => {
    const byte = fc.integer({ min: 0, max: 255 });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("GET", "POST", "DELETE", "FOO", "get", "G\x00T", ""),
        fc.array(byte, { maxLength: 30 }),
        fc.array(fc.tuple(fc.array(byte, { minLength: 1, maxLength: 10 }), fc.array(byte, { maxLength: 20 })), {
          maxLength: 3,
        }),
        async (method, target, headers) => {
          const head = Buffer.concat([
            Buffer.from(`${method} /plants/`, "latin1"),
            Buffer.from(target.filter((b) => b !== 0x20 && b !== 0x0d && b !== 0x0a)),
            Buffer.from(" HTTP/1.1\r\nHost: localhost\r\n", "latin1"),
            ...headers.map(([name, value]) =>
              Buffer.concat([
                Buffer.from(name.filter((b) => b !== 0x0d && b !== 0x0a)),
                Buffer.from(": "),
                Buffer.from(value.filter((b) => b !== 0x0d && b !== 0x0a)),
                Buffer.from("\r\n"),
              ]),
            ),
            Buffer.from(`${auth}Connection: close\r\n\r\n`, "latin1"),
          ]);
          const result = await exchange(server.url, [head], { ms: 1000 });
          // Bun's parser answers a bare 505 to a control byte in the target: a finding with
          // its own test below; here it is let through so the property can look further.
          const appOrOther = result.statuses.filter(
            (status, i) => !(status === 505 && result.parserStatuses[i] === 505),
          );
          check(
            appOrOther.every((status) => status < 500),
            () => `5xx for ${JSON.stringify(head.toString("latin1"))}\n  -> ${clip(result.raw, 300)}`,
          );
        },
      ),
      { numRuns: 150 },
    );
    await expectAlive();
  });

  test("invalid UTF-8 in a body with a correct Content-Length: 400 with the Error body", async () => {
    const body = new Uint8Array([
      0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x37, 0x2c, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xc0, 0xed, 0xa0, 0x80, 0x22,
      0x7d,
    ]);
    const result = await exchange(server.url, [
      `POST /plants HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    ]);
    expect(result.statuses).toEqual([400]);
    expect(result.raw).toMatch(/content-type: application\/json/i);
    expect(result.raw).toMatch(/\{"error":400,"message":"[^"]+"\}$/);
    await expectAlive();
  });

  test("a Content-Length larger than the bytes sent, then the client goes away", async () => {
    for (let i = 0; i < 6; i++) {
      const result = await exchange(
        server.url,
        [
          `POST /plants HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"id":77,"name":"`,
        ],
        { abort: i % 2 === 0, halfClose: i % 2 === 1, ms: 500 },
      );
      expect(result.statuses.filter((status) => status >= 500)).toEqual([]);
    }
    const chunked = await exchange(
      server.url,
      [
        `POST /plants HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"id"`,
      ],
      { abort: true },
    );
    expect(chunked.statuses.filter((status) => status >= 500)).toEqual([]);
    await expectAlive();
  });

  test("framing attacks: bad header characters, duplicate or conflicting lengths, bad chunks", async () => {
    const requests = [
      `GET /plants HTTP/1.1\r\nHost: x\r\nX-B\x01d: y\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\n: empty-name\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: x\r\n folded: y\r\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\nHost: localhost\n${auth}\r\n`,
      `GET /plants HTTP/1.1\r\n${auth}\r\n`, // no Host
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: -1\r\n\r\n{}`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 99999999999999999999\r\n\r\n{}`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 0x10\r\n\r\n{}`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n{}\r\n0\r\n\r\n`,
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{}`,
    ];
    for (const request of requests) {
      const result = await exchange(server.url, [request], { halfClose: true, ms: 1000 });
      expect({ request: clip(JSON.stringify(request), 160), fiveXX: result.statuses.filter((s) => s >= 500) }).toEqual({
        request: clip(JSON.stringify(request), 160),
        fiveXX: [],
      });
    }
    await expectAlive();
  });

  test("HTTP/1.0 is answered", async () => {
    const result = await exchange(server.url, [`GET /plants HTTP/1.0\r\n${auth}\r\n`]);
    expect(result.statuses).toEqual([200]);
    expect(result.raw.slice(result.raw.indexOf("\r\n\r\n") + 4)).toBe(JSON.stringify(seeded));
    await expectAlive();
  });

  test("pipelined requests are answered in order", async () => {
    const one = (line: string, extra = "") => `${line} HTTP/1.1\r\nHost: localhost\r\n${auth}${extra}\r\n`;
    const result = await exchange(
      server.url,
      [
        one("GET /plants") +
          one("GET /nowhere") +
          one("GET /plants?limit=x") +
          one("DELETE /plants/%zz") +
          `POST /plants HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nContent-Length: 9\r\n\r\n{"id":1,}` +
          one("GET /plants?limit=1", "Connection: close\r\n"),
      ],
      { expected: 6, ms: 3000 },
    );
    expect(result.statuses).toEqual([200, 404, 400, 400, 400, 200]);
    await expectAlive();
  });

  test("an unknown method on a known path is never served as GET", async () => {
    for (const method of ["FOO", "pOST", "Delete", "BREW"]) {
      const result = await exchange(server.url, [`${method} /plants HTTP/1.1\r\nHost: localhost\r\n${auth}\r\n`], {
        halfClose: true,
      });
      expect({ method, statuses: result.statuses.filter((s) => s < 400 || s >= 500) }).toEqual({
        method,
        statuses: [],
      });
    }
    await expectAlive();
  });

  // Bun's HTTP parser itself answers a bare 505 (or 400) to a request line it cannot split in
  // three: a malformed version, no version, or a control byte (0x00-0x20) in the target. The
  // app never sees these requests; what it can promise is that they go no further and the
  // server keeps serving.
  test("a malformed request line is refused by the HTTP parser and the server keeps serving", async () => {
    const seen: Record<string, number[]> = {};
    const lines = [
      ...["HTTP/1.1\n", "http/1.1", "HTTP/1.1 ", "HTTP/1.10", "HTTP/1.2", "HTTP/1", "HTTP/"].map(
        (v) => `GET /plants ${v}`,
      ),
      "GET /plants",
      "GET /plants/\x00 HTTP/1.1",
      "GET /plants/\x1f HTTP/1.1",
      "GET /plants/1 2 HTTP/1.1",
    ];
    for (const line of lines) {
      const result = await exchange(server.url, [`${line}\r\nHost: localhost\r\n${auth}\r\n`], { halfClose: true });
      seen[JSON.stringify(line)] = result.statuses;
    }
    await expectAlive();
    const unexpected = Object.entries(seen).filter(
      ([, statuses]) => statuses.length !== 1 || ![400, 505].includes(statuses[0] as number),
    );
    expect(unexpected).toEqual([]);
  });

  test("a fragment in the request-target is a 400", async () => {
    const result = await exchange(server.url, [
      `GET /plants#frag HTTP/1.1\r\nHost: localhost\r\n${auth}Connection: close\r\n\r\n`,
    ]);
    await expectAlive();
    expect(result.statuses).toEqual([400]);
  });
});
