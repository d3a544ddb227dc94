/**
 * Hostile input, property-based: whatever a client sends, the answer is a clean 4xx with the
 * Error body (or a success the SPEC allows), never a 5xx, never a hang; a refused request
 * leaves the stored plants byte-for-byte as they were, and the service keeps answering.
 *
 * Known findings have their own example-based tests below ("Finding:" comments), and the
 * properties step around their triggers (a literal "#" in a URL; Bun's bare 505 to a request
 * line it cannot parse), so a property keeps looking for new problems instead of finding the
 * same one every run. The same over raw TCP, against a real server: tests/process/hostile-tcp.test.ts.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { makeTestApp, onSqlite, type TestApp } from "../support/helpers";
import {
  allowedCreateOutcomes,
  almostJsonText,
  authorizationParts,
  authorizationValue,
  BODY_LIMIT,
  type CreateOutcome,
  check,
  clip,
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
  HOSTILE_RUNS as RUNS,
  randomPath,
  type StoredPlant,
  utf8Bytes,
  validLimit,
} from "../support/hostile-arbitraries";
import { within } from "../support/until";

const REQUEST_TIMEOUT_MS = 2000;
/** Deeper runs take longer than the suite's default test timeout. */
const PROPERTY_TIMEOUT_MS = Math.max(30_000, RUNS * 60);

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
  const alice = await t.user("alice");
  const bob = await t.user("bob");
  for (const { owner, text } of SEEDED) {
    const response = await t.call("POST", "/plants", {
      token: owner === "alice" ? alice.token : bob.token,
      json: text,
    });
    expect(response.status).toBe(200);
  }
  return { t, token: alice.token, aliceId: alice.id };
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
  const response = await within(world.t.app.handle(request), REQUEST_TIMEOUT_MS, what);
  const text = await within(response.text(), REQUEST_TIMEOUT_MS, `body of ${what}`);
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
            } else if (one && (sent === "PUT" || sent === "PATCH")) {
              const ids = decodedIds.map(idOf).filter((s) => s !== undefined && owned.has(s));
              check(
                body !== undefined && answer.status === 200 && ids.length > 0,
                () => `${answer.status} ${clip(answer.text)} for ${what()}`,
              );
              const changed = before.filter((row) => !after.includes(row));
              check(
                changed.length === 1 && after.length === before.length,
                () => `200 but changed ${JSON.stringify(changed)} for ${what()}`,
              );
              check((answer.json as { name?: unknown })?.name === `Path ${id}`, () => `wrong answer for ${what()}`);
              // Put the plant back as it was, so later runs see the same plants.
              const row = JSON.parse(changed[0] as string) as { id: string; name: string; tag: string; no_tag: number };
              const name = Buffer.from(row.name, "hex").toString("utf8");
              const tag = row.no_tag ? undefined : Buffer.from(row.tag, "hex").toString("utf8");
              const text = JSON.stringify({ name, tag });
              const headers = authHeaders(world, { "content-type": "application/json" });
              const again = await send(
                world,
                new Request(`http://localhost/plants/${row.id}`, { method: "PUT", headers, body: text }),
                text,
              );
              check(again.status === 200, () => `could not restore ${text}: ${again.status}`);
              check(JSON.stringify(snapshot(world)) === JSON.stringify(before), () => "restored plant differs");
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
