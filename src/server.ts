import type { App, AppOps, FaultLog } from "./app";
import { errorResponse, faultDetail } from "./http/errors";
import type { AccessLine } from "./ops/logger";
import { observed } from "./ops/observe";

/** Past this Bun answers a bare 413 itself; below it the app answers with the Error body. */
const MAX_DECLARED_BODY_BYTES = 2 ** 31 - 1;
const DRAIN_POLL_MS = 5;
/** In-flight must stay at zero this many polls in a row before the listener is closed. */
const QUIET_POLLS = 3;

/**
 * Elysia finds the path by searching the URL for "/" from index 11, which skips the path's
 * own slash when the Host header is 1 to 3 characters ("http://x/plants"), and every such
 * request would be misrouted. Those few requests are re-addressed to a long-enough host.
 */
function withRoutableUrl(request: Request): Request {
  const pathStart = request.url.indexOf("/", request.url.indexOf("//") + 2);
  if (pathStart >= 11 || pathStart < 0) return request;
  return new Request(`http://localhost${request.url.slice(pathStart)}`, request);
}

export interface ServeOptions {
  port: number;
  host: string;
  maxInFlight: number;
  idleTimeoutSeconds: number;
  log: FaultLog;
  access: (line: AccessLine) => void;
  ops: AppOps;
}

/**
 * Listens for the app, counting requests in flight: past the cap a request gets a fast 503
 * instead of joining an unbounded queue, and `drain` can wait for the count to reach zero.
 */
export function serve(app: App, { port, host, maxInFlight, idleTimeoutSeconds, log, access, ops }: ServeOptions) {
  let inFlight = 0;
  let draining = false;

  /** Once shutdown starts, keep-alive clients are told to reconnect elsewhere. */
  function closingIfDraining(response: Response): Response {
    if (draining) response.headers.set("connection", "close");
    return response;
  }

  function admit(request: Request): Response | Promise<Response> {
    if (inFlight >= maxInFlight) {
      return errorResponse(503, "The service is at capacity; retry in a moment.", {
        "retry-after": "1",
        "x-content-type-options": "nosniff",
      });
    }
    const result = app.fetch(request);
    // A synchronous answer (most reads) is done before anything else runs: nothing to count.
    if (!(result instanceof Promise)) return result;
    inFlight++;
    return result.then(
      (response) => {
        inFlight--;
        return response;
      },
      (error) => {
        inFlight--;
        throw error;
      },
    );
  }

  const handle = observed(admit, { access, notes: ops.notes, metrics: ops.metrics, routes: app.routes });

  const server = Bun.serve({
    port,
    hostname: host,
    idleTimeout: idleTimeoutSeconds,
    maxRequestBodySize: MAX_DECLARED_BODY_BYTES,
    fetch(request) {
      const result = handle(withRoutableUrl(request));
      return result instanceof Promise ? result.then(closingIfDraining) : closingIfDraining(result);
    },
    error(error) {
      log("unhandled server error", faultDetail(error));
      return errorResponse(500, "Internal server error; the failure has been logged.");
    },
  });

  return {
    server,
    get inFlight() {
      return inFlight;
    },
    /**
     * Lets in-flight requests finish, up to `timeoutMs`, then closes the listener. Bun's
     * `stop()` resets requests it has accepted but not yet handed over, so it is only called
     * once nothing has been in flight for a few polls. Resolves to the requests cut off.
     */
    async drain(timeoutMs: number): Promise<number> {
      draining = true;
      const deadline = performance.now() + timeoutMs;
      let quiet = 0;
      while (quiet < QUIET_POLLS && performance.now() < deadline) {
        quiet = inFlight === 0 ? quiet + 1 : 0;
        await Bun.sleep(DRAIN_POLL_MS);
      }
      const cutOff = inFlight;
      await server.stop(true);
      return cutOff;
    },
  };
}
