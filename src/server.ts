import type { App, AppOps } from "./app";
import type { Config } from "./config";
import { type FaultLog, faultDetail } from "./core/fault";
import { errorResponse } from "./http/errors";
import { addressable, UNADDRESSABLE } from "./http/request-target";
import type { AccessLine } from "./ops/logger";
import { observed } from "./ops/observe";

/** Past this Bun answers a bare 413 itself; below it the app answers with the Error body. */
const MAX_DECLARED_BODY_BYTES = 2 ** 31 - 1;
const DRAIN_POLL_MS = 5;
const QUIET_POLLS = 3;

export type ServeOptions = Pick<Config, "port" | "host" | "idleTimeoutSeconds"> & {
  log: FaultLog;
  access: (line: AccessLine) => void;
  ops: AppOps;
};

export function serve(app: App, { port, host, idleTimeoutSeconds, log, access, ops }: ServeOptions) {
  let draining = false;

  function closingIfDraining(response: Response): Response {
    if (draining) response.headers.set("connection", "close");
    return response;
  }

  /** A change stream is quiet between events by design: no idle timeout cuts it (its heartbeats keep proxies open). */
  function untimed(request: Request, response: Response): Response {
    if (response.headers.get("content-type") === "text/event-stream") server.timeout(request, 0);
    return closingIfDraining(response);
  }

  const observe = { access, notes: ops.notes, metrics: ops.metrics, routes: app.routes };
  const handle = observed((request) => app.fetch(request), observe);
  // Observed like any request (request id, access line), the one refusal built once.
  const unaddressable = observed(() => errorResponse(400, UNADDRESSABLE), observe);

  const server = Bun.serve({
    port,
    hostname: host,
    idleTimeout: idleTimeoutSeconds,
    maxRequestBodySize: MAX_DECLARED_BODY_BYTES,
    fetch(request, server) {
      const peer = () => server.requestIP(request)?.address;
      const target = addressable(request);
      const result =
        target === undefined
          ? unaddressable(new Request("http://localhost/", { method: request.method }), peer)
          : handle(target, peer, () => server.timeout(request, 1));
      return result instanceof Promise
        ? result.then((response) => untimed(request, response))
        : closingIfDraining(result);
    },
    error(error) {
      log("unhandled server error", faultDetail(error));
      return errorResponse(500, "Internal server error; the failure has been logged.");
    },
  });

  return {
    server,
    /**
     * Waits up to `timeoutMs` for Bun's in-flight count (a streamed list counts until sent) to stay
     * at zero a few polls: `stop()` resets requests accepted but not yet handed over. Resolves to those cut off.
     */
    async drain(timeoutMs: number): Promise<number> {
      draining = true;
      const deadline = performance.now() + timeoutMs;
      let quiet = 0;
      while (quiet < QUIET_POLLS && performance.now() < deadline) {
        quiet = server.pendingRequests === 0 ? quiet + 1 : 0;
        await Bun.sleep(DRAIN_POLL_MS);
      }
      const cutOff = server.pendingRequests;
      await server.stop(true);
      return cutOff;
    },
  };
}
