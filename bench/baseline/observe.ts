/**
 * The per-request work the service does around every request, done here as directly as it
 * can be: a request id (the caller's when sane, else a new one) echoed in X-Request-Id, one
 * JSON access-log line on stdout (buffered, written in large chunks), and a request counter
 * and latency histogram by method, route and status. Without it the ratio would compare an
 * observed service with an unobserved one.
 *
 * BASELINE_BARE=1 skips all of it (no request id, no log line, no metrics, no log writer): the
 * bench's floor, what a server with no observability at all costs.
 */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:/+=@-]{1,128}$/;
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

interface Series {
  count: number;
  sum: number;
  perBucket: Uint32Array;
}

export interface Note {
  id: string;
  userId: number | undefined;
}

function bareSetting(): boolean {
  const value = process.env.BASELINE_BARE?.trim() || "0";
  if (value !== "0" && value !== "1") {
    console.error(`plant-store baseline: BASELINE_BARE must be 0 or 1, not "${value}"`);
    process.exit(1);
  }
  return value === "1";
}

/** No per-request observation at all (BASELINE_BARE=1). */
export const BARE = bareSetting();

export const notes = new WeakMap<Request, Note>();
const series = new Map<string, Series>();
const fileSink = BARE ? undefined : Bun.file(1).writer({ highWaterMark: 64 * 1024 });
// Lines gather here and go to the file writer 64 KiB at a time (the service's pino destination
// buffers too): Bun's writer alone makes a write syscall of every line.
let gathered = "";
const handOver = () => {
  if (gathered !== "") fileSink?.write(gathered);
  gathered = "";
};
const sink = fileSink && {
  write(line: string) {
    gathered += line;
    if (gathered.length >= 64 * 1024) handOver();
  },
};
export const flushLog = () => {
  handOver();
  return fileSink?.flush();
};
if (fileSink) setInterval(flushLog, 50).unref();

function routeOf(url: string): string {
  const start = url.indexOf("/", 8);
  const query = url.indexOf("?", start);
  const path = query < 0 ? url.slice(start) : url.slice(start, query);
  if (path === "/plants" || path === "/plants/") return "/plants";
  return path.startsWith("/plants/") ? "/plants/:id" : "unmatched";
}

function record(request: Request, note: Note, status: number, started: number) {
  const seconds = (performance.now() - started) / 1000;
  const route = routeOf(request.url);
  const key = `${request.method} ${route} ${status}`;
  let s = series.get(key);
  if (!s) {
    s = { count: 0, sum: 0, perBucket: new Uint32Array(BUCKETS.length + 1) };
    series.set(key, s);
  }
  s.count++;
  s.sum += seconds;
  let bucket = 0;
  while (bucket < BUCKETS.length && seconds > (BUCKETS[bucket] as number)) bucket++;
  s.perBucket[bucket] = (s.perBucket[bucket] ?? 0) + 1;
  const user = note.userId === undefined ? "" : `,"userId":${note.userId}`;
  sink?.write(
    `{"level":"${status >= 500 ? "error" : "info"}","time":"${new Date().toISOString()}","reqId":${JSON.stringify(note.id)},` +
      `"method":${JSON.stringify(request.method)},"route":"${route}","status":${status},` +
      `"ms":${Math.round(seconds * 1e6) / 1000}${user},"msg":"request"}\n`,
  );
}

export function observed(handle: (request: Request) => Response | Promise<Response>) {
  if (BARE) return handle;
  const finish = (request: Request, note: Note, started: number, response: Response) => {
    response.headers.set("x-request-id", note.id);
    record(request, note, response.status, started);
    return response;
  };
  return (request: Request): Response | Promise<Response> => {
    const started = performance.now();
    const given = request.headers.get("x-request-id");
    const note: Note = {
      id: given !== null && SANE_REQUEST_ID.test(given) ? given : crypto.randomUUID(),
      userId: undefined,
    };
    notes.set(request, note);
    const result = handle(request);
    if (result instanceof Promise) return result.then((response) => finish(request, note, started, response));
    return finish(request, note, started, result);
  };
}
