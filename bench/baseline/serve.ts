/**
 * The routes and the server both baselines share: each brings its own handlers and store, this
 * matches the request target the way the service's router does and runs Bun.serve with the
 * per-request work of ./observe.ts (none with BASELINE_BARE=1). Prints exactly one line, `listening on http://HOST:PORT`,
 * once it accepts connections, and closes the store on SIGINT/SIGTERM.
 */
import { BODY_LIMIT_BYTES, TOO_LARGE } from "./body";
import {
  atCapacity,
  atCapacityNow,
  bodyError,
  collectionMethods,
  fragment,
  healthy,
  internal,
  itemMethods,
  noRoute,
} from "./http";
import { flushLog, observed } from "./observe";

type Answer = Response | Promise<Response>;

export interface Handlers {
  /** GET or HEAD /plants; `queryStart` is the index of `?` in `url`, or -1. */
  list(request: Request, url: string, queryStart: number): Answer;
  create(request: Request, declaredLength: string | null): Answer;
  /** DELETE /plants/{segment}; the segment is not yet checked to be an id. */
  remove(request: Request, segment: string): Answer;
}

export function fail(message: string): never {
  console.error(`plant-store baseline: ${message}`);
  process.exit(1);
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

function router({ list, create, remove }: Handlers) {
  return (request: Request): Answer => {
    if (atCapacityNow()) return atCapacity();
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
  };
}

/** PORT (default 3000, 0 for any free one) and HOST (default 127.0.0.1), read before the store is opened. */
export function listenAddress(): { port: number; host: string } {
  const portText = process.env.PORT?.trim() || "3000";
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) fail("PORT must be an integer between 0 and 65535");
  return { port: Number(portText), host: process.env.HOST?.trim() || "127.0.0.1" };
}

/** Serves the handlers until SIGINT/SIGTERM, then stops accepting, runs `close` and exits. */
export function serve(
  { port, host }: ReturnType<typeof listenAddress>,
  handlers: Handlers,
  close: () => void | Promise<void>,
): void {
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = Bun.serve({
      port,
      hostname: host,
      idleTimeout: 30,
      // Past this Bun answers a bare 413 itself; below it the handler answers with the Error body.
      maxRequestBodySize: 2 ** 31 - 1,
      fetch: observed(router(handlers)),
      error(error) {
        console.error("unhandled error", error);
        return internal();
      },
    });
  } catch (error) {
    void close();
    fail(`cannot listen on ${host}:${port}: ${error instanceof Error ? error.message : String(error)}`);
  }
  console.log(`listening on http://${host}:${server.port}`);
  flushLog();

  let stopping = false;
  async function shutdown() {
    if (stopping) return;
    stopping = true;
    await server.stop(true);
    await close();
    await flushLog();
    process.exit(0);
  }
  process.on("SIGINT", () => void shutdown());
  process.on("SIGTERM", () => void shutdown());
}
