/**
 * The change streams' cost: what 1,000 open Server-Sent-Events streams (GET /plants/changes with
 * Accept: text/event-stream) cost an idle service, and how long one change takes to reach them
 * all. One service with its defaults but the rate limit off (RATE_LIMIT_PER_MINUTE=0) and
 * CHANGE_STREAMS_PER_TOKEN=STREAMS, so one user's token can hold them all (MAX_CHANGE_STREAMS at
 * its default, which must be at least STREAMS):
 *
 * - idle: the server's CPU time (utime + stime, all threads) over IDLE_SECONDS with no stream open
 *   and its RSS (VmRSS); then STREAMS streams of one user are opened (plain TCP sockets writing
 *   the request and counting what comes back, so the client is cheap), each until its ": ok"
 *   comment; then, from SETTLE_MS on, the CPU over IDLE_SECONDS again (every stream's heartbeat
 *   falls in it) and the RSS again;
 * - fan-out: with the streams open, ROUNDS_FAN_OUT times, a new plant (POST /plants), timed from
 *   sending the POST to the moment the last stream has received its `id:` line.
 *
 * Part of `bun run bench` (SQLite) and `bun run bench --engine postgres`, after the other
 * scenarios (BENCH_CHANGE_STREAMS=0 skips it); alone:
 *
 *   bun bench/change-streams.ts [--engine postgres]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "bun";
import { type Cluster, createDatabase, startCluster } from "../scripts/pg-cluster";
import { loadConfig } from "../src/config";
import { ENGINE } from "./options";
import { mark } from "./rounds";
import {
  cli,
  cpuSeconds,
  fail,
  fmt,
  median,
  memoryKiB,
  onFail,
  POSTGRES_TARGETS,
  SERVICE_LIMIT_OFF,
  startTarget,
  type Target,
} from "./targets";

const STREAMS = 1_000;
const IDLE_SECONDS = 10;
const ROUNDS_FAN_OUT = 20;
/** The pause before the idle window with the streams open: the window then holds one heartbeat (after 10 s idle) to each. */
const SETTLE_MS = 2_000;
/** Streams being opened at once. */
const OPENING_AT_ONCE = 100;
/** A round whose change has not reached every stream by then fails the bench. */
const FAN_OUT_TIMEOUT_MS = 10_000;
/** The targets: one core's CPU share with the streams open and idle, the RSS they add, the slowest fan-out. */
const CPU_BAR_PERCENT = 5;
const RSS_BAR_MIB = 100;
const FAN_OUT_BAR_MS = 1_000;

const MAX_STREAMS = loadConfig({}).maxChangeStreams;

export interface StreamFigures {
  engine: "sqlite" | "postgres";
  cpuIdlePercent: number;
  cpuStreamsPercent: number;
  rssIdleKiB: number;
  rssStreamsKiB: number;
  rssAfterFanOutKiB: number;
  openSeconds: number;
  fanOutMs: number[];
  /** /proc/loadavg's 1-minute figure at the start and the end of the scenario. */
  load: [number, number];
}

interface StreamState {
  /** Until the response's header block has passed: its text so far (x-request-id would match "id: "). */
  head: string | undefined;
  ok: boolean;
  events: number;
  /** The last 3 characters of the previous read: a marker split over two reads is still found. */
  tail: string;
  onOk?: () => void;
}

const count = (text: string, marker: string, skipBefore: number) => {
  let n = 0;
  for (let at = text.indexOf(marker); at >= 0; at = text.indexOf(marker, at + 1))
    if (at + marker.length > skipBefore) n++;
  return n;
};

/**
 * STREAMS sockets of one token; `reached` is called as each stream's event count passes the
 * round's target, with the time it did.
 */
async function openStreams(url: string, token: string, onEvent: (events: number, at: number) => void) {
  const { hostname, port } = new URL(url);
  const request = `GET /plants/changes HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${token}\r\n\r\n`;
  const sockets: Socket<StreamState>[] = [];
  let closedEarly = 0;
  let done = false;
  const openOne = () =>
    new Promise<void>((resolve, reject) => {
      const state: StreamState = { head: "", ok: false, events: 0, tail: "", onOk: resolve };
      Bun.connect<StreamState>({
        hostname,
        port: Number(port),
        data: state,
        socket: {
          open(socket) {
            sockets.push(socket);
            socket.write(request);
          },
          data(socket, bytes) {
            const at = performance.now();
            const s = socket.data;
            let text = bytes.toString("latin1");
            if (s.head !== undefined) {
              s.head += text;
              const end = s.head.indexOf("\r\n\r\n");
              if (end < 0) return;
              if (!s.head.startsWith("HTTP/1.1 200"))
                reject(new Error(`a stream was answered ${s.head.slice(0, s.head.indexOf("\r\n"))}`));
              text = s.head.slice(end + 4);
              s.head = undefined;
            }
            const seen = s.tail + text;
            if (!s.ok && seen.includes(": ok")) {
              s.ok = true;
              s.onOk?.();
              s.onOk = undefined;
            }
            const events = count(seen, "id: ", s.tail.length);
            s.tail = seen.slice(-3);
            if (events > 0) {
              s.events += events;
              onEvent(s.events, at);
            }
          },
          close(socket) {
            if (!done) closedEarly++;
            socket.data.onOk?.();
          },
          error(_socket, error) {
            reject(error);
          },
          connectError(_socket, error) {
            reject(error);
          },
        },
      }).catch(reject);
    });
  for (let first = 0; first < STREAMS; first += OPENING_AT_ONCE) {
    await Promise.all(Array.from({ length: Math.min(OPENING_AT_ONCE, STREAMS - first) }, openOne));
  }
  return {
    /** Streams the server closed before the end. */
    closedEarly: () => closedEarly,
    allOk: () => sockets.every((socket) => socket.data.ok),
    close() {
      done = true;
      for (const socket of sockets) socket.end();
    },
  };
}

/** One core's share, in %, of the process's CPU time over `seconds` of waiting. */
async function cpuOver(pid: number, seconds: number): Promise<number> {
  const before = cpuSeconds(pid);
  const start = performance.now();
  await Bun.sleep(seconds * 1000);
  const after = cpuSeconds(pid);
  if (before === undefined || after === undefined) fail("change streams: the server exited");
  return ((after - before) / ((performance.now() - start) / 1000)) * 100;
}

const load1 = () => loadavg()[0] as number;

/**
 * Starts the service on `database` (a SQLite file, or a PostgreSQL database's URL; its log goes
 * to a file named from `logPrefix`) and measures.
 */
export async function changeStreamsScenario(
  engine: "sqlite" | "postgres",
  database: string,
  logPrefix = database,
): Promise<StreamFigures> {
  if (MAX_STREAMS < STREAMS) fail(`change streams: MAX_CHANGE_STREAMS defaults to ${MAX_STREAMS}, below ${STREAMS}`);
  const base: Target = engine === "postgres" ? POSTGRES_TARGETS.serviceLimitOff : SERVICE_LIMIT_OFF;
  const settings: Target = {
    ...base,
    env: { ...base.env, CHANGE_STREAMS_PER_TOKEN: String(STREAMS), MAX_CHANGE_STREAMS: String(MAX_STREAMS) },
  };
  const loadAtStart = load1();
  const token = await cli(["token", "create", "--user", "bench-a"], database);
  const server = await startTarget(settings, database, logPrefix);
  let streams: Awaited<ReturnType<typeof openStreams>> | undefined;
  try {
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    let nextId = 1;
    const create = async () => {
      const response = await fetch(`${server.url}/plants`, {
        method: "POST",
        headers,
        body: JSON.stringify({ id: nextId++, name: "Streamed fern", tag: "stream" }),
      });
      await response.arrayBuffer();
      if (response.status !== 200 && response.status !== 201)
        fail(`change streams: a create answered ${response.status}`);
    };
    // Warm the paths the scenario uses, then let the server settle.
    await create();
    for (const path of ["/plants?limit=1", "/plants/changes?limit=1"]) {
      const response = await fetch(`${server.url}${path}`, { headers });
      await response.arrayBuffer();
      if (response.status !== 200) fail(`change streams: GET ${path} answered ${response.status}`);
    }
    await Bun.sleep(1000);
    const cpuIdlePercent = await cpuOver(server.pid, IDLE_SECONDS);
    const rssIdleKiB = await memoryKiB(server.pid, "VmRSS");

    let target = 0;
    let reached = 0;
    let lastAt = 0;
    let allReached: (() => void) | undefined;
    const opening = performance.now();
    streams = await openStreams(server.url, token, (events, at) => {
      if (events !== target) return;
      reached++;
      lastAt = Math.max(lastAt, at);
      if (reached === STREAMS) allReached?.();
    }).catch((error: Error) => fail(`change streams: opening the streams failed: ${error.message}`));
    const openSeconds = (performance.now() - opening) / 1000;
    if (!streams.allOk() || streams.closedEarly() > 0)
      fail(`change streams: ${streams.closedEarly()} of ${STREAMS} streams were closed while opening`);

    // The window starts SETTLE_MS after the last stream opened, so that it holds one heartbeat to every stream.
    await Bun.sleep(SETTLE_MS);
    const cpuStreamsPercent = await cpuOver(server.pid, IDLE_SECONDS);
    const rssStreamsKiB = await memoryKiB(server.pid, "VmRSS");
    if (streams.closedEarly() > 0) fail(`change streams: ${streams.closedEarly()} streams closed while idle`);

    const fanOutMs: number[] = [];
    for (let round = 1; round <= ROUNDS_FAN_OUT; round++) {
      target = round;
      reached = 0;
      lastAt = 0;
      const all = new Promise<void>((resolve) => {
        allReached = resolve;
      });
      const sent = performance.now();
      await create();
      const timedOut = await Promise.race([all.then(() => false), Bun.sleep(FAN_OUT_TIMEOUT_MS).then(() => true)]);
      if (timedOut)
        fail(
          `change streams: round ${round}'s change reached ${reached} of ${STREAMS} streams in ${FAN_OUT_TIMEOUT_MS} ms`,
        );
      fanOutMs.push(lastAt - sent);
      await Bun.sleep(200);
    }
    const rssAfterFanOutKiB = await memoryKiB(server.pid, "VmRSS");
    if (streams.closedEarly() > 0) fail(`change streams: ${streams.closedEarly()} streams closed during the fan-out`);
    return {
      engine,
      cpuIdlePercent,
      cpuStreamsPercent,
      rssIdleKiB,
      rssStreamsKiB,
      rssAfterFanOutKiB,
      openSeconds,
      fanOutMs,
      load: [loadAtStart, load1()],
    };
  } finally {
    streams?.close();
    await server.stop();
  }
}

/** Prints the figures; answers the verdicts, one line per target. */
export function printChangeStreams(f: StreamFigures): { met: boolean; lines: string[] } {
  const mib = (kib: number) => kib / 1024;
  const rssIncrease = mib(f.rssStreamsKiB - f.rssIdleKiB);
  const fanOutMedian = median(f.fanOutMs);
  const fanOutMax = Math.max(...f.fanOutMs);
  console.log(
    `\nChange streams (${f.engine === "postgres" ? "PostgreSQL" : "SQLite"}) — ${STREAMS} SSE streams of one token (CHANGE_STREAMS_PER_TOKEN=${STREAMS}, MAX_CHANGE_STREAMS=${MAX_STREAMS}, the default); the service's defaults but the rate limit OFF (RATE_LIMIT_PER_MINUTE=0); CPU over ${IDLE_SECONDS} s idle (with the streams: from ${SETTLE_MS / 1000} s after they opened, a heartbeat to each in it), one core = 100 %; fan-out: POST /plants sent → the last stream's \`id:\` line, ${ROUNDS_FAN_OUT} plants; load average ${fmt(f.load[0], 2)} → ${fmt(f.load[1], 2)}\n`,
  );
  console.log("| figure | no stream | 1,000 streams open | target |");
  console.log("|---|---|---|---|");
  console.log(
    `| server CPU, idle | ${fmt(f.cpuIdlePercent, 2)} % | ${fmt(f.cpuStreamsPercent, 2)} % | < ${CPU_BAR_PERCENT} % |`,
  );
  console.log(
    `| server RSS (VmRSS) | ${fmt(mib(f.rssIdleKiB), 1)} MiB | ${fmt(mib(f.rssStreamsKiB), 1)} MiB (+${fmt(rssIncrease, 1)} MiB, ${fmt((f.rssStreamsKiB - f.rssIdleKiB) / STREAMS, 1)} KiB a stream); ${fmt(mib(f.rssAfterFanOutKiB), 1)} MiB after the fan-out | +< ${RSS_BAR_MIB} MiB |`,
  );
  console.log(`| opening the streams | | ${fmt(f.openSeconds, 2)} s | |`);
  console.log(
    `| fan-out to all streams | | median ${fmt(fanOutMedian, 1)} ms, max ${fmt(fanOutMax, 1)} ms (min ${fmt(Math.min(...f.fanOutMs), 1)}) | < ${FAN_OUT_BAR_MS} ms |`,
  );
  const cpuMet = f.cpuStreamsPercent < CPU_BAR_PERCENT;
  const rssMet = rssIncrease < RSS_BAR_MIB;
  const fanOutMet = fanOutMax < FAN_OUT_BAR_MS;
  const name = `change streams (${f.engine})`;
  return {
    met: cpuMet && rssMet && fanOutMet,
    lines: [
      `${name}: ${STREAMS} idle streams cost ${fmt(f.cpuStreamsPercent, 2)} % of a core (target < ${CPU_BAR_PERCENT} %): ${mark(cpuMet)}`,
      `${name}: ${STREAMS} streams add ${fmt(rssIncrease, 1)} MiB of RSS (target < ${RSS_BAR_MIB} MiB): ${mark(rssMet)}`,
      `${name}: a change reaches all ${STREAMS} streams in ${fmt(fanOutMedian, 1)} ms median, ${fmt(fanOutMax, 1)} ms max over ${ROUNDS_FAN_OUT} (target < ${FAN_OUT_BAR_MS} ms): ${mark(fanOutMet)}`,
    ],
  };
}

/** On a throwaway cluster of its own (as bench/postgres.ts): its database, then the scenario. */
async function onOwnCluster(): Promise<StreamFigures> {
  let cluster: Cluster;
  try {
    cluster = await startCluster({ durable: true });
  } catch (error) {
    fail(`cannot start a PostgreSQL cluster: ${(error as Error).message}`);
  }
  const logs = mkdtempSync(join(tmpdir(), "plant-store-streams-pg-"));
  const guard = onFail(() => {
    cluster.stopNow();
    rmSync(logs, { recursive: true, force: true });
  });
  try {
    const database = await createDatabase(cluster.url, "bench_streams");
    return await changeStreamsScenario("postgres", database, join(logs, "streams"));
  } finally {
    await cluster.stop();
    guard.release();
    rmSync(logs, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  process.once("SIGINT", () => fail("interrupted"));
  let figures: StreamFigures;
  if (ENGINE === "postgres") figures = await onOwnCluster();
  else {
    const dir = mkdtempSync(join(tmpdir(), "plant-store-streams-"));
    const guard = onFail(() => rmSync(dir, { recursive: true, force: true }));
    try {
      figures = await changeStreamsScenario("sqlite", join(dir, "streams.sqlite"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
      guard.release();
    }
  }
  const { met, lines } = printChangeStreams(figures);
  console.log(`\nTargets:\n  ${lines.join("\n  ")}`);
  console.log(met ? "\nAll targets met." : "\nSome targets are not met (see above).");
}
