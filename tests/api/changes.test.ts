/**
 * Every change is an event (SPEC.md, "Additions (fourth round)"): the owner's change log as
 * `GET /plants/changes` shows it (polling: the change's shape, what appends and what does not,
 * `Changes-Cursor`, `after`, `limit`, `Link`) and the same path as a `text/event-stream` (its
 * opening, its first events, new events on an open stream, the per-token bound), through the real
 * app on the engine under test.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { BASE, expectError, makeTestApp, type TestApp } from "../support/helpers";
import { until, within } from "../support/until";

const MIN = "-9223372036854775808";
const MAX = "9223372036854775807";
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
/** How long a test waits for a stream's answer or its next event before it fails (the SPEC says 1 s). */
const EVENT_WAIT_MS = 5_000;
/** The per-test timeout of tests that read streams or write a hundred plants. */
const SLOW_MS = 30_000;

type ChangeType = "plant.created" | "plant.updated" | "plant.deleted";

interface Change {
  seq: number;
  type: ChangeType;
  timestamp: string;
  data: { id: number; name: string; tag?: string };
}

let t: TestApp;
let token: string;
/** Streams opened by the current test: closed after it whatever happened. */
const openStreams: EventStream[] = [];

beforeEach(async () => {
  t = await makeTestApp();
  token = await t.tokenFor("alice");
});

afterEach(async () => {
  await Promise.all(openStreams.splice(0).map((stream) => stream.close()));
});

// ---------------------------------------------------------------------------------------------
// Writes

/** POST /plants with a raw JSON body (exact ids), as `as`. */
const post = (json: string, headers: Record<string, string> = {}, as = token) =>
  t.call("POST", "/plants", { token: as, json, headers });

/** Creates a plant (exact id, optional tag) and expects the 200. */
async function create(id: string, name: string, tag?: string, as = token) {
  const tagPart = tag === undefined ? "" : `,"tag":${JSON.stringify(tag)}`;
  const response = await post(`{"id":${id},"name":${JSON.stringify(name)}${tagPart}}`, {}, as);
  expect(response.status).toBe(200);
  return response;
}

const put = (id: string, json: unknown, headers: Record<string, string> = {}, as = token) =>
  t.call("PUT", `/plants/${id}`, { token: as, json, headers });

const patch = (id: string, json: unknown, headers: Record<string, string> = {}, as = token) =>
  t.call("PATCH", `/plants/${id}`, {
    token: as,
    json,
    headers: { "content-type": "application/merge-patch+json", ...headers },
  });

const del = (id: string, headers: Record<string, string> = {}, as = token) =>
  t.call("DELETE", `/plants/${id}`, { token: as, headers });

const etagOf = async (id: string, as = token) =>
  (await t.call("GET", `/plants/${id}`, { token: as })).headers.get("etag") as string;

// ---------------------------------------------------------------------------------------------
// Polling

/** GET /plants/changes with `query` (e.g. "?after=3"), as `as` (null: no token): the raw answer. */
const get = (query = "", as: string | null = token, headers: Record<string, string> = {}) =>
  t.call("GET", `/plants/changes${query}`, { token: as ?? undefined, headers });

interface Page {
  changes: Change[];
  /** The body as sent (ids past 2^53 are exact only here). */
  text: string;
  cursor: string | null;
  link: string | null;
}

/** A 200 page of the change log: a bare JSON array, with its Changes-Cursor and Link. */
async function changes(query = "", as = token): Promise<Page> {
  const response = await get(query, as);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^application\/json\b/);
  const text = await response.text();
  const body = JSON.parse(text) as unknown;
  expect(Array.isArray(body)).toBe(true);
  return {
    changes: body as Change[],
    text,
    cursor: response.headers.get("changes-cursor"),
    link: response.headers.get("link"),
  };
}

/** The caller's whole log, oldest first (every test keeps it under 1000 changes). */
const all = async (as = token) => (await changes("?limit=1000", as)).changes;

/** The target of a `rel="next"` Link, checked to be a relative URL on this path naming `after`. */
function nextOf(link: string | null): string | undefined {
  if (link === null) return undefined;
  const match = /^<([^>]+)>;\s*rel="next"$/.exec(link);
  expect(match).not.toBeNull();
  const target = match?.[1] as string;
  expect(target).toStartWith("/plants/changes?");
  expect(target).toMatch(/[?&]after=\d+(&|$)/);
  return target;
}

/** The `after` a next link names. */
const afterIn = (target: string) => /[?&]after=(\d+)(?:&|$)/.exec(target)?.[1];

/** Follows `next` links from `first`; `between` runs after each page that has one. */
async function walk(first: string, between: (page: number) => Promise<void> = async () => {}) {
  const seen: Change[] = [];
  let query: string | undefined = first;
  for (let page = 0; query !== undefined; page++) {
    const current = await changes(query);
    seen.push(...current.changes);
    const target = nextOf(current.link);
    if (target !== undefined) {
      const last = current.changes.at(-1);
      expect(last).toBeDefined();
      expect(afterIn(target)).toBe(String(last?.seq));
      await between(page);
    }
    query = target?.slice("/plants/changes".length);
    if (page > 10_000) throw new Error("the walk does not end");
  }
  return seen;
}

/** Seqs are positive integers, strictly increasing. */
function expectIncreasing(log: Change[]) {
  for (const [i, change] of log.entries()) {
    expect(Number.isSafeInteger(change.seq)).toBe(true);
    expect(change.seq).toBeGreaterThan(i === 0 ? 0 : (log[i - 1] as Change).seq);
  }
}

/** Asserts `refused` leaves the caller's log (body and cursor) exactly as it was. */
async function expectNothingAppended(refused: () => Promise<void>, as = token) {
  const before = await changes("?limit=1000", as);
  await refused();
  const after = await changes("?limit=1000", as);
  expect(after.text).toBe(before.text);
  expect(after.cursor).toBe(before.cursor);
}

// ---------------------------------------------------------------------------------------------
// Streams

interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/** One event block (lines, without the blank line that ends it); undefined when it carries no data. */
function parseEvent(block: string): SseEvent | undefined {
  const data: string[] = [];
  let id: string | undefined;
  let event: string | undefined;
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
    else if (field === "id") id = value;
    else if (field === "event") event = value;
  }
  return data.length === 0 ? undefined : { id, event, data: data.join("\n") };
}

const readerOf = (body: ReadableStream<Uint8Array>) => body.getReader();

/** A `text/event-stream` answer read event by event, with a deadline on each wait. */
class EventStream {
  private reader: ReturnType<typeof readerOf> | undefined;
  private readonly decoder = new TextDecoder();
  private buffer = "";
  private readonly ready: SseEvent[] = [];
  private closed = false;

  constructor(
    readonly response: Response,
    private readonly abort: AbortController,
  ) {}

  /** The next event that carries data (comments and data-less blocks skipped); fails past EVENT_WAIT_MS. */
  async next(what = "the next event"): Promise<SseEvent> {
    const deadline = performance.now() + EVENT_WAIT_MS;
    for (;;) {
      const ready = this.ready.shift();
      if (ready !== undefined) return ready;
      const reader = this.reader ?? readerOf(this.response.body as ReadableStream<Uint8Array>);
      this.reader = reader;
      const { done, value } = await within(reader.read(), Math.max(Math.round(deadline - performance.now()), 1), what);
      if (done) throw new Error(`the stream ended before ${what}`);
      this.buffer = (this.buffer + this.decoder.decode(value, { stream: true })).replace(/\r\n/g, "\n");
      for (let end = this.buffer.indexOf("\n\n"); end !== -1; end = this.buffer.indexOf("\n\n")) {
        const event = parseEvent(this.buffer.slice(0, end));
        this.buffer = this.buffer.slice(end + 2);
        if (event !== undefined) this.ready.push(event);
      }
    }
  }

  /** The next `n` events. */
  async take(n: number, what: string): Promise<SseEvent[]> {
    const events: SseEvent[] = [];
    for (let i = 0; i < n; i++) events.push(await this.next(`${what} (${i + 1} of ${n})`));
    return events;
  }

  /** Cancels the reader (or the unread body) and aborts the request; safe to call twice. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    try {
      if (this.reader !== undefined) await this.reader.cancel();
      else if (this.response.body !== null && !this.response.body.locked) await this.response.body.cancel();
    } catch {
      // Already ended or consumed.
    }
    this.abort.abort();
  }
}

/**
 * GET /plants/changes with `Accept: text/event-stream` (through app.handle, with an abort signal
 * so that closing it ends the request as a disconnect would). Closed after the test in any case.
 */
async function openStream(
  init: { query?: string; headers?: Record<string, string>; as?: string | null } = {},
): Promise<EventStream> {
  const { query = "", as = token } = init;
  const headers: Record<string, string> = { accept: "text/event-stream", ...init.headers };
  if (as !== null) headers.authorization = `Bearer ${as}`;
  const abort = new AbortController();
  const request = new Request(`${BASE}/plants/changes${query}`, { headers, signal: abort.signal });
  const response = await within(Promise.resolve(t.app.handle(request)), EVENT_WAIT_MS, "the stream's answer");
  const stream = new EventStream(response, abort);
  openStreams.push(stream);
  return stream;
}

/** Opens a stream and expects it to be a 200 event stream. */
async function openedStream(init: Parameters<typeof openStream>[0] = {}): Promise<EventStream> {
  const stream = await openStream(init);
  expect(stream.response.status).toBe(200);
  expect(stream.response.headers.get("content-type")).toMatch(/^text\/event-stream\b/);
  return stream;
}

/** An event is exactly this change: `id: <seq>`, `event: <type>`, `data: <the change>`. */
function expectEventOf(event: SseEvent, change: Change) {
  expect(event.id).toBe(String(change.seq));
  expect(event.event).toBe(change.type);
  expect(JSON.parse(event.data)).toEqual(change);
}

// ---------------------------------------------------------------------------------------------

describe("GET /plants/changes: the change log", () => {
  test("a change has exactly seq, type, timestamp and data; data is the plant with its id, tag left out when none", async () => {
    const before = Date.now();
    await create("7", "Fern", "green");
    await create("8", "Moss");
    await create("9", "Ivy", "");
    const log = await all();
    expect(log.length).toBe(3);
    for (const change of log) {
      expect(Object.keys(change).sort()).toEqual(["data", "seq", "timestamp", "type"]);
      expect(change.type).toBe("plant.created");
      expect(change.timestamp).toMatch(TIMESTAMP);
      expect(new Date(change.timestamp).toISOString()).toBe(change.timestamp);
      expect(Date.parse(change.timestamp)).toBeGreaterThanOrEqual(before - 60_000);
      expect(Date.parse(change.timestamp)).toBeLessThanOrEqual(Date.now() + 60_000);
    }
    expectIncreasing(log);
    expect(log.map((change) => change.data)).toEqual([
      { id: 7, name: "Fern", tag: "green" },
      { id: 8, name: "Moss" },
      { id: 9, name: "Ivy", tag: "" },
    ]);
    expect(Object.keys(log[1]?.data ?? {}).sort()).toEqual(["id", "name"]);
    expect(Object.keys(log[2]?.data ?? {}).sort()).toEqual(["id", "name", "tag"]);
  });

  test("ids are exact JSON integers at both ends of int64", async () => {
    await create(MAX, "Max");
    await create(MIN, "Min");
    const { text } = await changes();
    expect(text).toMatch(/"id":\s*9223372036854775807\s*[,}]/);
    expect(text).toMatch(/"id":\s*-9223372036854775808\s*[,}]/);
    expect(text).not.toContain('"9223372036854775807"');
    expect(text).not.toContain('"-9223372036854775808"');
  });

  test("create, PUT, PATCH and DELETE append created, updated and deleted changes, oldest first, data the plant after", async () => {
    await create("7", "Fern", "green");
    expect((await put("7", { name: "Ivy" })).status).toBe(200);
    expect((await patch("7", { tag: "shade" })).status).toBe(200);
    expect((await patch("7", { tag: null })).status).toBe(200);
    expect((await put("7", { name: "Rose", tag: "red" })).status).toBe(200);
    expect((await patch("7", { name: "Tulip" })).status).toBe(200);
    expect((await del("7")).status).toBe(204);
    const { changes: log, cursor } = await changes();
    expect(log.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: "plant.created", data: { id: 7, name: "Fern", tag: "green" } },
      { type: "plant.updated", data: { id: 7, name: "Ivy" } },
      { type: "plant.updated", data: { id: 7, name: "Ivy", tag: "shade" } },
      { type: "plant.updated", data: { id: 7, name: "Ivy" } },
      { type: "plant.updated", data: { id: 7, name: "Rose", tag: "red" } },
      { type: "plant.updated", data: { id: 7, name: "Tulip", tag: "red" } },
      { type: "plant.deleted", data: { id: 7, name: "Tulip", tag: "red" } },
    ]);
    expectIncreasing(log);
    expect(cursor).toBe(String(log.at(-1)?.seq));
  });

  test("a delete shows the plant as it was, also when made with a matching If-Match", async () => {
    await create("1", "Fern");
    await create("2", "Moss", "");
    expect((await del("2", { "if-match": await etagOf("2") })).status).toBe(204);
    expect((await del("1", { "if-match": "*" })).status).toBe(204);
    const log = await all();
    expect(log.slice(2).map(({ type, data }) => ({ type, data }))).toEqual([
      { type: "plant.deleted", data: { id: 2, name: "Moss", tag: "" } },
      { type: "plant.deleted", data: { id: 1, name: "Fern" } },
    ]);
  });

  test("an empty tag and no tag are different plants: a PUT that drops an empty tag is an update", async () => {
    await create("7", "Fern", "");
    const before = await etagOf("7");
    const response = await put("7", { name: "Fern" });
    expect(response.status).toBe(200);
    expect(response.headers.get("etag")).not.toBe(before);
    const log = await all();
    expect(log.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: "plant.created", data: { id: 7, name: "Fern", tag: "" } },
      { type: "plant.updated", data: { id: 7, name: "Fern" } },
    ]);
  });

  test("a plant created again after its delete is a new created change", async () => {
    await create("7", "Fern");
    expect((await del("7")).status).toBe(204);
    await create("7", "Fern");
    const log = await all();
    expect(log.map((change) => change.type)).toEqual(["plant.created", "plant.deleted", "plant.created"]);
    expectIncreasing(log);
  });
});

describe("nothing is appended for a write that changes nothing or is refused", () => {
  beforeEach(async () => {
    await create("7", "Fern", "green");
  });

  test("a 409 duplicate create", async () => {
    await expectNothingAppended(async () => {
      await expectError(await post('{"id":7,"name":"Other"}'), 409);
      await expectError(await post('{"id":7,"name":"Fern","tag":"green"}'), 409);
    });
  });

  test("an Idempotency-Key replay (and the same key with another body, 422)", async () => {
    const json = '{"id":8,"name":"Moss"}';
    expect((await post(json, { "idempotency-key": "k-1" })).status).toBe(200);
    await expectNothingAppended(async () => {
      const replay = await post(json, { "idempotency-key": "k-1" });
      expect(replay.status).toBe(200);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      await expectError(await post('{"id":9,"name":"Moss"}', { "idempotency-key": "k-1" }), 422);
    });
    expect((await all()).map(({ type, data }) => ({ type, data }))).toEqual([
      { type: "plant.created", data: { id: 7, name: "Fern", tag: "green" } },
      { type: "plant.created", data: { id: 8, name: "Moss" } },
    ]);
  });

  test("PATCH {}, a PATCH to the values it has and a PUT of the same name and tag", async () => {
    const etag = await etagOf("7");
    await expectNothingAppended(async () => {
      for (const response of [
        await patch("7", {}),
        await patch("7", { name: "Fern" }),
        await patch("7", { tag: "green" }),
        await put("7", { name: "Fern", tag: "green" }),
      ]) {
        expect(response.status).toBe(200);
        expect(response.headers.get("etag")).toBe(etag);
      }
    });
  });

  test("a 412: If-Match with a wrong ETag on PUT, PATCH and DELETE", async () => {
    await expectNothingAppended(async () => {
      await expectError(await put("7", { name: "Ivy" }, { "if-match": '"nope"' }), 412);
      await expectError(await patch("7", { name: "Ivy" }, { "if-match": '"nope"' }), 412);
      await expectError(await del("7", { "if-match": '"nope"' }), 412);
    });
    expect(await (await t.call("GET", "/plants/7", { token })).json()).toEqual({ name: "Fern", tag: "green" });
  });

  test("a 404 update or delete: an unknown id, or another user's plant", async () => {
    const bob = await t.tokenFor("bob");
    await create("8", "Bob's moss", undefined, bob);
    await expectNothingAppended(async () => {
      await expectNothingAppended(async () => {
        await expectError(await put("99", { name: "Ivy" }), 404);
        await expectError(await patch("99", { name: "Ivy" }), 404);
        await expectError(await del("99"), 404);
        await expectError(await put("8", { name: "Mine" }), 404);
        await expectError(await patch("8", { name: "Mine" }), 404);
        await expectError(await del("8"), 404);
      }, bob);
    });
  });

  test("a 400 body on POST, PUT and PATCH, and a 415", async () => {
    await expectNothingAppended(async () => {
      await expectError(await post('{"id":"8","name":"Moss"}'), 400);
      await expectError(await post('{"id":8.5,"name":"Moss"}'), 400);
      await expectError(await post('{"id":8,"name":""}'), 400);
      await expectError(await post("{not json"), 400);
      await expectError(await put("7", { name: "" }), 400);
      await expectError(await put("7", { name: "Ivy", tag: null }), 400);
      await expectError(await patch("7", { name: null }), 400);
      await expectError(await patch("7", { tag: 5 }), 400);
      await expectError(await put("7", "{}", { "content-type": "text/plain" }), 415);
    });
  });

  test("a 401: a write without a valid token", async () => {
    await expectNothingAppended(async () => {
      await expectError(await t.call("POST", "/plants", { json: { id: 8, name: "Moss" } }), 401);
      await expectError(await t.call("PUT", "/plants/7", { token: "pst_nope", json: { name: "Ivy" } }), 401);
      await expectError(await t.call("DELETE", "/plants/7"), 401);
    });
  });
});

describe("each user sees only their own changes", () => {
  test("another user's changes never show, and never move the caller's cursor", async () => {
    const bob = await t.tokenFor("bob");
    await create("7", "Fern");
    const mine = await changes();
    await create("7", "Bob's fern", "b", bob);
    expect((await put("7", { name: "Bob's ivy" }, {}, bob)).status).toBe(200);
    expect((await del("7", {}, bob)).status).toBe(204);
    const after = await changes();
    expect(after.text).toBe(mine.text);
    expect(after.cursor).toBe(mine.cursor);
    expect((await all(bob)).map(({ type, data }) => ({ type, data }))).toEqual([
      { type: "plant.created", data: { id: 7, name: "Bob's fern", tag: "b" } },
      { type: "plant.updated", data: { id: 7, name: "Bob's ivy" } },
      { type: "plant.deleted", data: { id: 7, name: "Bob's ivy" } },
    ]);
    expect((await all()).map(({ type, data }) => ({ type, data }))).toEqual([
      { type: "plant.created", data: { id: 7, name: "Fern" } },
    ]);
  });

  test("a user with no changes gets [] and Changes-Cursor: 0, while another user has some", async () => {
    await create("7", "Fern");
    const bob = await t.tokenFor("bob");
    for (const query of ["", "?after=0", "?limit=0", "?limit=10"]) {
      const page = await changes(query, bob);
      expect(page.text).toBe("[]");
      expect(page.cursor).toBe("0");
      expect(page.link).toBeNull();
    }
  });

  test("two tokens of one user read the same log", async () => {
    const alice2 = await t.tokenFor("alice");
    await create("7", "Fern");
    await create("8", "Moss", undefined, alice2);
    const first = await changes();
    const second = await changes("", alice2);
    expect(second.text).toBe(first.text);
    expect(second.cursor).toBe(first.cursor);
    expect(first.changes.map((change) => change.data.id)).toEqual([7, 8]);
  });
});

describe("Changes-Cursor, after, limit and Link", () => {
  test("Changes-Cursor is on every 200, the newest seq of the caller (0 when empty); limit=0 gives [] with it", async () => {
    expect((await changes()).cursor).toBe("0");
    expect((await changes("?limit=0")).text).toBe("[]");
    expect((await changes("?limit=0")).cursor).toBe("0");
    await create("1", "a");
    await create("2", "b");
    await create("3", "c");
    const log = await all();
    const newest = String(log.at(-1)?.seq);
    for (const query of ["", "?limit=0", "?limit=1", `?after=${log[0]?.seq}&limit=1`, `?after=${newest}`, "?after=0"]) {
      expect((await changes(query)).cursor).toBe(newest);
    }
    const empty = await changes("?limit=0");
    expect(empty.text).toBe("[]");
    expect(empty.cursor).toBe(newest);
  });

  test("after gives only the later changes; after at or past the newest gives []", async () => {
    for (const id of ["1", "2", "3", "4"]) await create(id, `p${id}`);
    const log = await all();
    const seqs = log.map((change) => change.seq);
    expect((await changes("?after=0")).changes).toEqual(log);
    expect((await changes(`?after=${seqs[1]}`)).changes).toEqual(log.slice(2));
    expect((await changes(`?after=${seqs[0]}&limit=2`)).changes).toEqual(log.slice(1, 3));
    expect((await changes(`?after=${seqs[1]}`)).changes.map((change) => change.data.id)).toEqual([3, 4]);
    for (const past of [String(seqs[3]), String((seqs[3] as number) + 1), String((seqs[3] as number) + 1000), MAX]) {
      const page = await changes(`?after=${past}`);
      expect(page.text).toBe("[]");
      expect(page.link).toBeNull();
      expect(page.cursor).toBe(String(seqs[3]));
    }
  });

  test(
    "without limit a page holds 100 changes, with a Link to the rest; the next page has the last one and no Link",
    async () => {
      for (let id = 1; id <= 101; id++) await create(String(id), `p${id}`);
      const first = await changes();
      expect(first.changes.length).toBe(100);
      expect(first.changes.map((change) => change.data.id)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
      const target = nextOf(first.link);
      expect(target).toBeDefined();
      expect(afterIn(target as string)).toBe(String(first.changes.at(-1)?.seq));
      const second = await changes((target as string).slice("/plants/changes".length));
      expect(second.changes.map((change) => change.data.id)).toEqual([101]);
      expect(second.link).toBeNull();
      expect(second.cursor).toBe(first.cursor);
      expect(first.cursor).toBe(String(second.changes[0]?.seq));
    },
    SLOW_MS,
  );

  test("limit takes 0 to 1000; a Link while more are there, none on the last page", async () => {
    for (const id of ["1", "2", "3"]) await create(id, `p${id}`);
    const log = await all();
    const twoOfThree = await changes("?limit=2");
    expect(twoOfThree.changes).toEqual(log.slice(0, 2));
    const target = nextOf(twoOfThree.link);
    expect(twoOfThree.link).toMatch(/^<\/plants\/changes\?[^>]*>;\s*rel="next"$/);
    expect(afterIn(target as string)).toBe(String(log[1]?.seq));
    for (const query of ["?limit=3", "?limit=4", "?limit=1000", `?after=${log[0]?.seq}&limit=2`, ""]) {
      const page = await changes(query);
      expect(page.link).toBeNull();
    }
    const one = await changes(`?after=${log[0]?.seq}&limit=1`);
    expect(one.changes).toEqual([log[1] as Change]);
    expect(afterIn(nextOf(one.link) as string)).toBe(String(log[1]?.seq));
  });

  test("following Link from any first page yields every change exactly once, oldest first", async () => {
    await create("1", "a");
    expect((await put("1", { name: "b" })).status).toBe(200);
    await create("2", "c", "t");
    expect((await del("1")).status).toBe(204);
    expect((await patch("2", { tag: null })).status).toBe(200);
    const log = await all();
    expect(log.length).toBe(5);
    for (const limit of [1, 2, 3, 4, 5]) {
      expect(await walk(`?limit=${limit}`)).toEqual(log);
      expect(await walk(`?after=0&limit=${limit}`)).toEqual(log);
    }
    expect(await walk(`?after=${log[1]?.seq}&limit=2`)).toEqual(log.slice(2));
  });

  test("changes made during a walk are reached by it, each once", async () => {
    await create("1", "a");
    await create("2", "b");
    const seen = await walk("?limit=1", async (page) => {
      if (page < 3) await create(String(10 + page), `new ${page}`);
    });
    const log = await all();
    expect(log.length).toBe(5);
    expect(seen).toEqual(log);
  });

  test.each(["-1", "abc", "1.5", "9223372036854775808", "", "1e3", "0x10"])(
    "after=%p is 400 with the Error body naming after",
    async (value) => {
      const message = await expectError(await get(`?after=${encodeURIComponent(value)}`), 400);
      expect(message).toContain("after");
    },
  );

  test.each(["-1", "1001", "x", "1.5", ""])("limit=%p is 400 with the Error body naming limit", async (value) => {
    const message = await expectError(await get(`?limit=${encodeURIComponent(value)}`), 400);
    expect(message).toContain("limit");
  });

  test("a refused value is never echoed", async () => {
    for (const query of ["?after=secret-ish-value", "?limit=secret-ish-value"]) {
      expect(await expectError(await get(query), 400)).not.toContain("secret-ish-value");
    }
  });

  test.each(["cursor", "offset", "since", "page"])("an unknown query parameter (%s) is 400 naming it", async (name) => {
    const message = await expectError(await get(`?${name}=1`), 400);
    expect(message).toContain(name);
  });

  test("401 without a token or with an unknown one, with WWW-Authenticate: Bearer", async () => {
    for (const as of [null, "pst_nope"]) {
      const response = await get("", as);
      expect(response.headers.get("www-authenticate")).toStartWith("Bearer");
      await expectError(response, 401);
    }
  });
});

describe("GET /plants/changes as a stream (Accept: text/event-stream)", () => {
  test(
    "answers 200 text/event-stream",
    async () => {
      const stream = await openedStream();
      await stream.close();
    },
    SLOW_MS,
  );

  test.each(["abc", "-1", "1.5", "9223372036854775808"])(
    "Last-Event-ID: %p is 400 with the Error body naming Last-Event-ID",
    async (value) => {
      const stream = await openStream({ headers: { "last-event-id": value } });
      const message = await expectError(stream.response, 400);
      expect(message).toContain("Last-Event-ID");
      await stream.close();
    },
    SLOW_MS,
  );

  test.each([
    ["TEXT/Event-Stream", "text/event-stream"],
    ["application/json;q=0.5, text/event-stream", "text/event-stream"],
    ["text/event-stream, application/json", "text/event-stream"],
    ["application/json, text/event-stream;q=0", "application/json"],
    ["text/event-stream;q=0.2, application/json", "application/json"],
    ["text/event-stream;q=0.2, */*", "application/json"],
    ["*/*", "application/json"],
  ])("Accept: %s is answered as %s", async (accept, type) => {
    // HEAD: the kind of answer, without opening a stream.
    const response = await t.app.handle(
      new Request(`${BASE}/plants/changes`, { method: "HEAD", headers: { accept, authorization: `Bearer ${token}` } }),
    );
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toStartWith(type);
  });

  test(
    "HEAD answers at once with the stream's headers and no body, and holds no stream's place",
    async () => {
      const head = (headers: Record<string, string> = {}) =>
        within(
          Promise.resolve(
            t.app.handle(
              new Request(`${BASE}/plants/changes`, {
                method: "HEAD",
                headers: { accept: "text/event-stream", authorization: `Bearer ${token}`, ...headers },
              }),
            ),
          ),
          EVENT_WAIT_MS,
          "the HEAD's answer",
        );
      for (let i = 0; i < 6; i++) {
        const response = await head();
        expect(response.status).toBe(200);
        expect(response.headers.get("content-type")).toMatch(/^text\/event-stream\b/);
        expect(await response.text()).toBe("");
      }
      expect((await head({ "last-event-id": "abc" })).status).toBe(400);
      // Every one of the token's five places is still free.
      const five: EventStream[] = [];
      try {
        for (let i = 0; i < 5; i++) five.push(await openedStream());
      } finally {
        await Promise.all(five.map((stream) => stream.close()));
      }
    },
    SLOW_MS,
  );

  test(
    "a bad after or an unknown parameter is 400 on a stream too; no token is 401",
    async () => {
      const badAfter = await openStream({ query: "?after=abc" });
      expect(await expectError(badAfter.response, 400)).toContain("after");
      const unknown = await openStream({ query: "?cursor=1" });
      expect(await expectError(unknown.response, 400)).toContain("cursor");
      const anonymous = await openStream({ as: null });
      await expectError(anonymous.response, 401);
      await Promise.all([badAfter.close(), unknown.close(), anonymous.close()]);
    },
    SLOW_MS,
  );

  test(
    "Last-Event-ID: 0 first sends the kept changes in order as id, event and data, then each new one",
    async () => {
      await create("7", "Fern", "green");
      await create(MAX, "Max");
      expect((await patch("7", { name: "Ivy" })).status).toBe(200);
      const kept = await all();
      const stream = await openedStream({ headers: { "last-event-id": "0" } });
      try {
        const first = await stream.take(3, "the kept changes");
        for (const [i, event] of first.entries()) expectEventOf(event, kept[i] as Change);
        expect(first[1]?.data).toMatch(/"id":\s*9223372036854775807\s*[,}]/);
        expect((await del("7")).status).toBe(204);
        const live = await stream.next("the delete made after the stream opened");
        expectEventOf(live, (await all()).at(-1) as Change);
        expect(JSON.parse(live.data)).toMatchObject({
          type: "plant.deleted",
          data: { id: 7, name: "Ivy", tag: "green" },
        });
      } finally {
        await stream.close();
      }
    },
    SLOW_MS,
  );

  test(
    "?after=0 sends every kept change; ?after=<seq> only the later ones, then new ones",
    async () => {
      for (const id of ["1", "2", "3"]) await create(id, `p${id}`);
      const kept = await all();
      const fromZero = await openedStream({ query: "?after=0" });
      const fromFirst = await openedStream({ query: `?after=${kept[0]?.seq}` });
      try {
        const everything = await fromZero.take(3, "every kept change");
        for (const [i, event] of everything.entries()) expectEventOf(event, kept[i] as Change);
        const later = await fromFirst.take(2, "the changes after the first");
        for (const [i, event] of later.entries()) expectEventOf(event, kept[i + 1] as Change);
        await create("4", "p4");
        const created = (await all()).at(-1) as Change;
        expectEventOf(await fromZero.next("the new change on the after=0 stream"), created);
        expectEventOf(await fromFirst.next("the new change on the after=<seq> stream"), created);
      } finally {
        await Promise.all([fromZero.close(), fromFirst.close()]);
      }
    },
    SLOW_MS,
  );

  test(
    "Last-Event-ID wins over after",
    async () => {
      for (const id of ["1", "2"]) await create(id, `p${id}`);
      const kept = await all();
      const stream = await openedStream({ query: `?after=${kept[1]?.seq}`, headers: { "last-event-id": "0" } });
      try {
        expectEventOf(await stream.next("the first kept change"), kept[0] as Change);
        expectEventOf(await stream.next("the second kept change"), kept[1] as Change);
      } finally {
        await stream.close();
      }
    },
    SLOW_MS,
  );

  test(
    "with neither Last-Event-ID nor after, only changes made after the stream opened: created, updated, deleted",
    async () => {
      await create("1", "Old");
      await create("2", "Older");
      const stream = await openedStream();
      try {
        const pending = stream.next("the create made after the stream opened");
        await create("3", "New", "n");
        const created = await pending;
        expect(JSON.parse(created.data)).toMatchObject({
          type: "plant.created",
          data: { id: 3, name: "New", tag: "n" },
        });
        expect((await patch("3", { tag: null })).status).toBe(200);
        const updated = await stream.next("the update");
        expect((await del("3")).status).toBe(204);
        const deleted = await stream.next("the delete");
        const log = await all();
        expect(log.length).toBe(5);
        for (const [i, event] of [created, updated, deleted].entries()) expectEventOf(event, log[i + 2] as Change);
        expect(JSON.parse(deleted.data)).toMatchObject({ type: "plant.deleted", data: { id: 3, name: "New" } });
      } finally {
        await stream.close();
      }
    },
    SLOW_MS,
  );

  test(
    "another user's changes never reach the stream",
    async () => {
      const bob = await t.tokenFor("bob");
      const stream = await openedStream();
      try {
        const pending = stream.next("alice's change");
        await create("1", "Bob's", undefined, bob);
        await create("2", "Alice's");
        const event = await pending;
        expect(JSON.parse(event.data)).toMatchObject({ type: "plant.created", data: { id: 2, name: "Alice's" } });
        expectEventOf(event, (await all())[0] as Change);
      } finally {
        await stream.close();
      }
    },
    SLOW_MS,
  );

  test(
    "a change reaches every open stream of its owner, whichever token opened it",
    async () => {
      const alice2 = await t.tokenFor("alice");
      const streams = [await openedStream(), await openedStream(), await openedStream({ as: alice2 })];
      try {
        const pending = streams.map((stream, i) => stream.next(`the change on stream ${i + 1}`));
        await create("7", "Fern");
        const change = (await all())[0] as Change;
        for (const event of await Promise.all(pending)) expectEventOf(event, change);
      } finally {
        await Promise.all(streams.map((stream) => stream.close()));
      }
    },
    SLOW_MS,
  );

  test(
    "a sixth open stream of one token is 429 with Retry-After and the Error body; another token still opens one",
    async () => {
      const five: EventStream[] = [];
      try {
        for (let i = 0; i < 5; i++) five.push(await openedStream());
        const sixth = await openStream();
        expect(sixth.response.headers.get("retry-after")).toMatch(/^\d+$/);
        await expectError(sixth.response, 429);
        await sixth.close();
        const other = await openedStream({ as: await t.tokenFor("alice") });
        await other.close();
      } finally {
        await Promise.all(five.map((stream) => stream.close()));
      }
    },
    SLOW_MS,
  );

  test(
    "a closed stream frees its place",
    async () => {
      const five: EventStream[] = [];
      try {
        for (let i = 0; i < 5; i++) five.push(await openedStream());
        await expectError((await openStream()).response, 429);
        await five.pop()?.close();
        await until(
          async () => {
            const again = await openStream();
            const status = again.response.status;
            await again.close();
            return status;
          },
          { holds: (status) => status === 200, timeoutMs: 5_000, what: "a stream to open after one closed" },
        );
      } finally {
        await Promise.all(five.map((stream) => stream.close()));
      }
    },
    SLOW_MS,
  );
});

describe("CHANGES_RETENTION_HOURS: a cursor older than what is kept", () => {
  /** Three changes, the first two pruned (as the retention pruner removes them); the seqs in order. */
  async function pruneFirstTwo(): Promise<number[]> {
    for (const id of ["1", "2", "3"]) await create(id, `p${id}`);
    const seqs = (await all()).map((change) => change.seq);
    const removed = await t.stores.changes.prune(Date.now() + 60_000, 2);
    expect(removed).toBe(2);
    return seqs;
  }

  test("after below the newest pruned change is 410 with the Error body and Changes-Cursor; at or past it, the rest", async () => {
    const seqs = await pruneFirstTwo();
    for (const after of ["0", String(seqs[0])]) {
      const response = await get(`?after=${after}`);
      expect(response.headers.get("changes-cursor")).toBe(String(seqs[2]));
      expect(await expectError(response, 410)).toContain("Changes-Cursor");
    }
    const rest = await changes(`?after=${seqs[1]}`);
    expect(rest.changes.map((change) => change.seq)).toEqual([seqs[2] as number]);
  });

  test("without after the log is read from its oldest kept change, and limit=0 gives the cursor", async () => {
    const seqs = await pruneFirstTwo();
    const page = await changes("");
    expect(page.changes.map((change) => change.seq)).toEqual([seqs[2] as number]);
    expect((await changes("?limit=0")).cursor).toBe(String(seqs[2]));
  });

  test("a stream from a pruned cursor is 410 too, before any event", async () => {
    await pruneFirstTwo();
    const stream = await openStream({ headers: { "last-event-id": "0" } });
    const message = await expectError(stream.response, 410);
    expect(message).toContain("Changes-Cursor");
    // Not an `after:` problem: the client sent Last-Event-ID.
    expect(message).not.toStartWith("after:");
  });
});

describe("CORS for the change feed", () => {
  test("a browser on an allowed origin may send Last-Event-ID and read Changes-Cursor", async () => {
    const cors = await makeTestApp({ corsOrigins: ["https://app.example.com"] });
    const secret = await cors.tokenFor("alice");
    const preflight = await cors.call("OPTIONS", "/plants/changes", {
      headers: {
        origin: "https://app.example.com",
        "access-control-request-method": "GET",
        "access-control-request-headers": "authorization, last-event-id",
      },
    });
    const allowed = preflight.headers.get("access-control-allow-headers")?.toLowerCase().split(/,\s*/);
    expect(allowed).toContain("last-event-id");
    const answer = await cors.call("GET", "/plants/changes", {
      token: secret,
      headers: { origin: "https://app.example.com" },
    });
    expect(answer.headers.get("access-control-expose-headers")?.split(/,\s*/)).toContain("changes-cursor");
  });
});

describe("limit=0", () => {
  test("gives the cursor and no Link, which would name the same page", async () => {
    for (const id of ["1", "2"]) await create(id, `p${id}`);
    const page = await changes("?limit=0");
    expect(page.changes).toEqual([]);
    expect(page.link).toBeNull();
    expect((await changes("?after=0&limit=0")).link).toBeNull();
  });
});

describe("other methods on /plants/changes", () => {
  test.each(["POST", "PUT", "PATCH", "DELETE"])(
    "%s is 405 with Allow: GET, not taken for a plant id",
    async (method) => {
      const response = await t.call(method, "/plants/changes", { token, json: { name: "x" } });
      expect(response.headers.get("allow")).toBe("GET");
      expect(await expectError(response, 405)).toContain("GET");
    },
  );
});
