/**
 * Every change is an event (SPEC.md), as real server processes show it on real sockets: change
 * streams on SIGTERM, SIGKILL right after 200s, a token revoked by the CLI, a quiet stream under
 * the shortest idle timeout, two PostgreSQL instances, and a client that stops reading. On the
 * engine under test (a SQLite file, or a PostgreSQL database of its own per test).
 */
import { afterEach, beforeEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { freshPostgresDatabase, onPostgres } from "../support/helpers";
import { DIRECT, type RunningServer, runCli, scratchDir, startServer } from "../support/process";
import { SLOW_TEST_TIMEOUT_MS } from "../support/timeouts";
import { until } from "../support/until";
import { bootstrapToken, userFromCli } from "../support/users";

setDefaultTimeout(SLOW_TEST_TIMEOUT_MS);

type ChangeType = "plant.created" | "plant.updated" | "plant.deleted";

interface Change {
  seq: number;
  type: ChangeType;
  timestamp: string;
  data: { id: number; name: string; tag?: string };
}

interface StreamEvent {
  id: number;
  type: string;
  change: Change;
  /** performance.now() when its last byte was read. */
  at: number;
}

let scratch: ReturnType<typeof scratchDir>;
/** Servers, readers and sockets the current test opened: gone after it, whatever happened. */
const servers: RunningServer[] = [];
const exited = new WeakSet<RunningServer>();
const cleanups: Array<() => Promise<void>> = [];

beforeEach(() => {
  scratch = scratchDir();
});
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup().catch(() => {})));
  for (const server of servers.splice(0)) {
    if (exited.has(server)) continue;
    server.kill("SIGKILL");
    await server.exited;
  }
  scratch.cleanup();
});

/** A database of the engine under test, for this test alone. */
async function database(): Promise<string> {
  return onPostgres ? freshPostgresDatabase() : join(scratch.dir, "plants.sqlite");
}

/** The server itself (no `bun run` in between, so signals reach it), stopped after the test. */
async function start(env: Record<string, string>): Promise<RunningServer> {
  const server = await startServer({ RATE_LIMIT_PER_MINUTE: "0", ...env }, { command: DIRECT });
  servers.push(server);
  void server.exited.then(() => exited.add(server));
  return server;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const json = (token: string) => ({ ...bearer(token), "content-type": "application/json" });

/** One write to a plant, expected to succeed; resolves when its answer has been read, with that moment. */
async function write(url: string, token: string, method: string, id: number, body?: unknown): Promise<number> {
  const response = await fetch(method === "POST" ? `${url}/plants` : `${url}/plants/${id}`, {
    method,
    headers: json(token),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await response.text();
  const at = performance.now();
  expect(`${method} ${id}: ${response.status}`).toBe(`${method} ${id}: ${method === "DELETE" ? 204 : 200}`);
  return at;
}

/** Every change of the caller's log, page after page (GET /plants/changes, following `after`). */
async function listChanges(url: string, token: string): Promise<Change[]> {
  const all: Change[] = [];
  for (let after = 0; ; ) {
    const response = await fetch(`${url}/plants/changes?after=${after}&limit=1000`, { headers: bearer(token) });
    expect(response.status).toBe(200);
    const page = (await response.json()) as Change[];
    all.push(...page);
    const last = page.at(-1);
    if (!response.headers.get("link") || last === undefined) return all;
    after = last.seq;
  }
}

/** One block of an event stream (the text before its blank line): its event, if it is one; comments go to `comments`. */
function sseBlock(block: string, comments: string[], at: number): StreamEvent | undefined {
  const fields: Record<string, string> = {};
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) comments.push(line.slice(1).trim());
    else {
      const colon = line.indexOf(": ");
      fields[line.slice(0, colon)] = line.slice(colon + 2);
    }
  }
  if (fields.data === undefined) return undefined;
  return { id: Number(fields.id), type: fields.event as string, change: JSON.parse(fields.data) as Change, at };
}

/** The complete events of an event stream's text (a cut-off last one left out). */
function sseEvents(text: string): StreamEvent[] {
  const blocks = text.split("\n\n").slice(0, -1);
  return blocks.flatMap((block) => sseBlock(block, [], 0) ?? []);
}

/** The body of a chunked HTTP answer as far as it arrived (a cut-off chunk's part included). */
function dechunked(received: string): string {
  const head = received.indexOf("\r\n\r\n");
  expect(received.slice(0, head)).toMatch(/^HTTP\/1\.1 200 [\s\S]*\r\ntransfer-encoding: chunked/i);
  let body = "";
  for (let at = head + 4; at < received.length; ) {
    const lineEnd = received.indexOf("\r\n", at);
    if (lineEnd < 0) break;
    const size = Number.parseInt(received.slice(at, lineEnd), 16);
    if (size === 0) break;
    body += received.slice(lineEnd + 2, lineEnd + 2 + size);
    at = lineEnd + 2 + size + 2;
  }
  return body;
}

/** /proc/net/tcp's state of an established connection. */
const TCP_ESTABLISHED = "01";

/**
 * The state (as /proc/net/tcp writes it) of the server's end of the loopback connection from
 * `clientPort`; undefined once the kernel holds no such socket.
 */
async function serverSideState(serverPort: number, clientPort: number): Promise<string | undefined> {
  const hex = (port: number) => `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  for (const line of (await Bun.file("/proc/net/tcp").text()).split("\n").slice(1)) {
    const [, local, remote, state] = line.trim().split(/\s+/);
    if (local === hex(serverPort) && remote === hex(clientPort)) return state;
  }
  return undefined;
}

/**
 * A change stream read with fetch as a client reads it: events parsed as they come, each with the
 * moment it arrived; how it ended (done, or an error) and when. Cancelled after the test.
 */
async function openStream(url: string, token: string, query = "", headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/plants/changes${query}`, {
    headers: { ...bearer(token), accept: "text/event-stream", ...headers },
  });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const state = {
    events: [] as StreamEvent[],
    comments: [] as string[],
    /** When the last bytes arrived. */
    lastBytesAt: performance.now(),
    /** Read to its end (the server ended it cleanly). */
    done: false,
    error: undefined as unknown,
    endedAt: undefined as number | undefined,
    /** Text after the last complete event: empty when the stream ended between events. */
    rest: "",
    bytes: 0,
  };
  const pump = (async () => {
    try {
      for (;;) {
        const { done, value } = await reader.read();
        const now = performance.now();
        if (done) {
          state.done = true;
          state.endedAt = now;
          return;
        }
        state.lastBytesAt = now;
        state.bytes += value.byteLength;
        state.rest += decoder.decode(value, { stream: true });
        for (let end = state.rest.indexOf("\n\n"); end >= 0; end = state.rest.indexOf("\n\n")) {
          const event = sseBlock(state.rest.slice(0, end), state.comments, now);
          state.rest = state.rest.slice(end + 2);
          if (event) state.events.push(event);
        }
      }
    } catch (error) {
      state.error = error;
      state.endedAt = performance.now();
    }
  })();
  const cancel = async () => {
    await reader.cancel().catch(() => {});
    await pump;
  };
  cleanups.push(cancel);
  await until(() => state.comments.includes("ok") || state.endedAt !== undefined, {
    timeoutMs: 5_000,
    what: "the stream's opening comment",
  });
  expect(state.comments[0]).toBe("ok");
  return { state, cancel, ended: () => state.endedAt !== undefined };
}

type Stream = Awaited<ReturnType<typeof openStream>>;

/** Waits until `stream` holds `count` events (or has ended), up to `timeoutMs`. */
function eventsOn(stream: Stream, count: number, timeoutMs = 5_000) {
  return until(() => stream.state.events.length, {
    holds: (n) => n >= count || stream.ended(),
    timeoutMs,
    intervalMs: 2,
    what: `${count} events on the stream`,
  });
}

/** The server's token list (the CLI's) and the id of `user`'s token. */
async function tokenIdOf(env: Record<string, string>, user: string): Promise<string> {
  const listing = await runCli(["token", "list"], env);
  expect(listing.code).toBe(0);
  const id = new RegExp(`^(\\d+)\\s+${user}\\s`, "m").exec(listing.stdout)?.[1];
  expect(id, listing.stdout).toBeDefined();
  return id as string;
}

describe("change streams of a real server process", () => {
  test("SIGTERM with two streams open: each ends cleanly within 3 s, before the process exits 0", async () => {
    const server = await start({ DATABASE_URL: await database(), SHUTDOWN_TIMEOUT_MS: "10000" });
    const token = bootstrapToken(server);
    const streams = [await openStream(server.url, token), await openStream(server.url, token)];
    await write(server.url, token, "POST", 1, { id: 1, name: "Fern" });
    for (const stream of streams) expect(await eventsOn(stream, 1)).toBe(1);

    const signalledAt = performance.now();
    let exitedAt = Number.POSITIVE_INFINITY;
    const exit = server.exited.then((code) => {
      exitedAt = performance.now();
      return code;
    });
    server.kill("SIGTERM");
    await until(() => streams.every((stream) => stream.ended()), { timeoutMs: 10_000, what: "both streams to end" });
    expect(await exit).toBe(0);

    for (const { state } of streams) {
      expect({ done: state.done, error: state.error, rest: state.rest }).toEqual({
        done: true,
        error: undefined,
        rest: "",
      });
      const endedAt = state.endedAt as number;
      expect(endedAt - signalledAt).toBeLessThan(3_000);
      expect(endedAt).toBeLessThan(exitedAt);
      expect(state.events.map((event) => event.type)).toEqual(["plant.created"]);
    }
    const output = await server.output();
    expect(output).toContain("Stopped cleanly.");
    expect(output).not.toContain("still in flight at the shutdown deadline");
  });

  test("SIGKILL right after 200s: started again on the same database, the log lists every acknowledged create exactly once", async () => {
    const env = { DATABASE_URL: await database() };
    const server = await start(env);
    const token = bootstrapToken(server);
    const TARGET = 150;
    const acknowledged: number[] = [];
    const unanswered: number[] = [];
    let next = 1;
    let killed = false;
    // Eight writers at once; the moment the 150th 200 is read, SIGKILL, with the others in flight.
    const writer = async () => {
      while (!killed) {
        const id = next++;
        let status: number;
        try {
          const response = await fetch(`${server.url}/plants`, {
            method: "POST",
            headers: json(token),
            body: JSON.stringify({ id, name: `p${id}` }),
          });
          await response.text();
          status = response.status;
        } catch {
          unanswered.push(id);
          continue;
        }
        // A 200 read after the kill was sent before it: acknowledged all the same.
        expect(status).toBe(200);
        acknowledged.push(id);
        if (acknowledged.length >= TARGET && !killed) {
          killed = true;
          server.kill("SIGKILL");
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, writer));
    expect(await server.exited).not.toBe(0);

    const again = await start(env);
    const changes = await listChanges(again.url, token);
    const created = changes.map((change) => change.data.id);
    // Each acknowledged create once; nothing that was never sent; one change per plant.
    expect(acknowledged.filter((id) => created.filter((c) => c === id).length !== 1)).toEqual([]);
    const sent = new Set([...acknowledged, ...unanswered]);
    expect(created.filter((id) => !sent.has(id))).toEqual([]);
    expect(new Set(created).size).toBe(created.length);
    for (const change of changes) {
      expect(change.type).toBe("plant.created");
      expect(change.data.name).toBe(`p${change.data.id}`);
    }
    const seqs = changes.map((change) => change.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    // The log and the plants agree: every plant stored has its create, and no other.
    const plants = await fetch(`${again.url}/plants?fields=id`, { headers: bearer(token) });
    const stored = ((await plants.json()) as Array<{ id: number }>).map((plant) => plant.id).sort((a, b) => a - b);
    expect([...created].sort((a, b) => a - b)).toEqual(stored);
  });

  test("a token revoked with the CLI: its stream ends within 5 s; another token's stream of the same user stays open", async () => {
    const env = { DATABASE_URL: await database() };
    const server = await start(env);
    const admin = bootstrapToken(server);
    const alice = await userFromCli(env, "alice");
    const revoked = await openStream(server.url, alice);
    const other = await openStream(server.url, admin);
    await write(server.url, alice, "POST", 1, { id: 1, name: "Fern" });
    expect(await eventsOn(revoked, 1)).toBe(1);

    const id = await tokenIdOf(env, "alice");
    const revokedBy = await runCli(["token", "revoke", id], env);
    expect(revokedBy.code).toBe(0);
    const revokedAt = performance.now();
    await until(() => revoked.ended(), { timeoutMs: 10_000, what: "the revoked token's stream to end" });
    const endedAt = revoked.state.endedAt as number;
    expect(endedAt - revokedAt).toBeLessThan(5_000);
    expect({ done: revoked.state.done, error: revoked.state.error, rest: revoked.state.rest }).toEqual({
      done: true,
      error: undefined,
      rest: "",
    });
    expect(other.ended()).toBe(false);
    expect((await fetch(`${server.url}/plants/changes`, { headers: bearer(alice) })).status).toBe(401);
    expect(await server.stop()).toBe(0);
  });

  test("IDLE_TIMEOUT_SECONDS=1: a stream quiet for 3 s, past the moment an idle keep-alive connection is cut, is still open and gets the next change", async () => {
    const server = await start({ DATABASE_URL: await database(), IDLE_TIMEOUT_SECONDS: "1" });
    const token = bootstrapToken(server);
    // The control: a keep-alive connection answered once, then quiet. Bun closes it once its
    // idle timeout has passed (its timer ticks every few seconds): proof the timeout is live.
    const { hostname, port } = new URL(server.url);
    const control = await new Promise<Socket>((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket));
      socket.once("error", reject);
    });
    let controlAnswer = "";
    let controlClosed = false;
    control.on("data", (chunk) => {
      controlAnswer += chunk.toString("latin1");
    });
    control.on("error", () => {});
    control.on("close", () => {
      controlClosed = true;
    });
    cleanups.push(async () => void control.destroy());
    control.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n");

    const stream = await openStream(server.url, token);
    await until(() => controlAnswer.startsWith("HTTP/1.1 200"), { timeoutMs: 5_000, what: "the control's answer" });
    await until(() => (performance.now() - stream.state.lastBytesAt >= 3_000 && controlClosed) || stream.ended(), {
      timeoutMs: 15_000,
      intervalMs: 50,
      what: "3 s without a byte on the stream, and the idle control connection closed",
    });
    expect(controlClosed).toBe(true);
    expect({ ended: stream.ended(), error: stream.state.error }).toEqual({ ended: false, error: undefined });
    expect(stream.state.events).toEqual([]);

    const answeredAt = await write(server.url, token, "POST", 7, { id: 7, name: "Late" });
    expect(await eventsOn(stream, 1)).toBe(1);
    const [event] = stream.state.events as [StreamEvent];
    expect(event.change).toMatchObject({ type: "plant.created", data: { id: 7, name: "Late" } });
    expect(event.at - answeredAt).toBeLessThan(1_000);
    expect(stream.ended()).toBe(false);
    expect(await server.stop()).toBe(0);
  });

  test("a client that stops reading is closed once it falls behind, and resumes with Last-Event-ID; another stream of the same user gets every event", async () => {
    const server = await start({ DATABASE_URL: await database(), SHUTDOWN_TIMEOUT_MS: "2000" });
    const token = bootstrapToken(server);
    // Sends its request and reads nothing more: the socket buffers fill (about 4 MiB on
    // loopback), then the server's queue for it passes 1 MiB.
    const { hostname, port } = new URL(server.url);
    const stalled = await new Promise<Socket>((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket));
      socket.once("error", reject);
    });
    stalled.pause();
    let stalledEnded = "";
    stalled.on("end", () => {
      stalledEnded ||= "end";
    });
    stalled.on("close", () => {
      stalledEnded ||= "close";
    });
    stalled.on("error", (error) => {
      stalledEnded ||= `error ${error.message}`;
    });
    cleanups.push(async () => void stalled.destroy());
    stalled.write(
      `GET /plants/changes?after=0 HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    );
    const serverSide = () => serverSideState(Number(port), stalled.localPort as number);
    expect(await serverSide()).toBe(TCP_ESTABLISHED);
    const reading = await openStream(server.url, token);
    // One change both have (the stalled one from after=0, whenever its request was handled).
    await write(server.url, token, "POST", 0, { id: 0, name: "first" });
    expect(await eventsOn(reading, 1)).toBe(1);

    // A FIN sent behind data the client never reads never reaches it: the server's own end of
    // the connection leaving ESTABLISHED is what shows it closed the connection.
    let serverClosedIt = false;
    const closed = async () => {
      serverClosedIt ||= stalledEnded !== "" || (await serverSide()) !== TCP_ESTABLISHED;
      return serverClosedIt;
    };
    // Big events (two 256-character fields, ~0.65 KB each) from 16 writers, until the stalled
    // connection is closed, or twice what the buffers and the 1 MiB hold went to the other stream.
    const big = (id: number, letter: string) => `${letter}${id}`.padEnd(256, letter);
    const MAX_BYTES = 10 * 1024 * 1024;
    let next = 1;
    let writes = 1;
    let writing = true;
    const writer = async () => {
      while (!serverClosedIt && reading.state.bytes < MAX_BYTES) {
        const id = next++;
        await write(server.url, token, "POST", id, { id, name: big(id, "n"), tag: big(id, "t") });
        writes++;
      }
    };
    const began = performance.now();
    const watching = until(async () => (await closed()) || !writing, { timeoutMs: 60_000, intervalMs: 100 });
    await Promise.all(Array.from({ length: 16 }, writer));
    writing = false;
    await watching;
    const writingMs = Math.round(performance.now() - began);
    await until(closed, { timeoutMs: 3_000, intervalMs: 50, what: "the server to close the stalled connection" }).catch(
      () => false,
    );
    const stateThen = { serverClosedIt, clientSaw: stalledEnded, serverSide: await serverSide() };

    // The reading stream has every change the log holds, in order, and is still open.
    const listed = await listChanges(server.url, token);
    expect(listed).toHaveLength(writes);
    await eventsOn(reading, writes, 10_000);
    expect(reading.ended()).toBe(false);
    expect(reading.state.events.map((event) => event.id)).toEqual(listed.map((change) => change.seq));

    // Reading again, the stalled client gets what was on its way, a beginning of its log (the
    // server dropped the rest), and the end of its stream; it resumes from its last event.
    let received = "";
    stalled.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
    });
    stalled.resume();
    await until(() => stalledEnded !== "" || received.endsWith("\r\n0\r\n\r\n"), {
      timeoutMs: 10_000,
      what: "the stalled stream's end once read",
    });
    const events = sseEvents(dechunked(received));
    const got = events.map((event) => event.id);
    expect(got).toEqual(listed.slice(0, got.length).map((change) => change.seq));
    expect(got.length).toBeLessThan(listed.length);
    const resumed =
      got.length === 0
        ? await openStream(server.url, token, "?after=0")
        : await openStream(server.url, token, "", { "last-event-id": String(got.at(-1)) });
    await eventsOn(resumed, listed.length - got.length, 10_000);
    expect(resumed.state.events.map((event) => event.id)).toEqual(listed.slice(got.length).map((change) => change.seq));

    expect(
      { ...stateThen, writes, bytesToOtherStream: reading.state.bytes, writingMs },
      "the server never closed the connection of the client that stopped reading",
    ).toMatchObject({ serverClosedIt: true });
    stalled.destroy();
    expect(await server.stop()).toBe(0);
  });
});

describe.if(onPostgres)("change streams across two instances on one PostgreSQL database", () => {
  test("creates, updates and deletes through instance 2 reach a stream on instance 1 within 1 s each, in seq order, with no gaps", async () => {
    const env = { DATABASE_URL: await database() };
    const one = await start(env);
    const token = bootstrapToken(one);
    const two = await start(env);
    const stream = await openStream(one.url, token);
    /** The moment each change's 200 was read, by what the change shows. */
    const answered = new Map<string, number>();
    const key = (type: ChangeType, id: number, name: string, tag?: string) => `${type} ${id} ${name} ${tag ?? "-"}`;

    /** Create, replace, patch and delete one plant through instance 2: four changes. */
    async function lifeOf(id: number, waitEach: boolean) {
      let seen = stream.state.events.length;
      const step = async (answeredAt: number, change: string) => {
        answered.set(change, answeredAt);
        if (waitEach) {
          seen++;
          await eventsOn(stream, seen, 3_000);
        }
      };
      await step(await write(two.url, token, "POST", id, { id, name: `c${id}` }), key("plant.created", id, `c${id}`));
      await step(await write(two.url, token, "PUT", id, { name: `u${id}` }), key("plant.updated", id, `u${id}`));
      await step(
        await write(two.url, token, "PATCH", id, { tag: `t${id}` }),
        key("plant.updated", id, `u${id}`, `t${id}`),
      );
      await step(await write(two.url, token, "DELETE", id), key("plant.deleted", id, `u${id}`, `t${id}`));
    }
    // One change at a time, then four writers at once.
    for (let id = 1; id <= 5; id++) await lifeOf(id, true);
    await Promise.all(
      [0, 1, 2, 3].map(async (worker) => {
        for (let i = 0; i < 5; i++) await lifeOf(100 + worker * 10 + i, false);
      }),
    );
    const total = answered.size;
    expect(total).toBe(100);
    expect(await eventsOn(stream, total, 5_000)).toBe(total);

    const late: string[] = [];
    for (const { change, at } of stream.state.events) {
      const change200 = answered.get(key(change.type, change.data.id, change.data.name, change.data.tag));
      expect(change200, JSON.stringify(change)).toBeDefined();
      const ms = at - (change200 as number);
      if (ms >= 1_000) late.push(`${change.seq} ${change.type} ${change.data.id}: ${Math.round(ms)} ms after its 200`);
    }
    expect(late).toEqual([]);

    const streamed = stream.state.events.map((event) => event.id);
    expect(stream.state.events.map((event) => event.change.seq)).toEqual(streamed);
    const [fromOne, fromTwo] = await Promise.all([listChanges(one.url, token), listChanges(two.url, token)]);
    expect(fromOne).toEqual(fromTwo);
    expect(streamed).toEqual(fromOne.map((change) => change.seq));
    expect(stream.state.events.map((event) => event.change)).toEqual(fromOne);
    for (let i = 1; i < streamed.length; i++) expect(streamed[i] as number).toBeGreaterThan(streamed[i - 1] as number);
    expect(await Promise.all([one.stop(), two.stop()])).toEqual([0, 0]);
  });
});
