import { type RouteLike, routePatternFor } from "../http/routes-table";
import type { AccessLine } from "./logger";
import type { Metrics } from "./metrics";
import { type RequestNote, type RequestNotes, requestIdFor } from "./request-id";

type Handler = (request: Request) => Response | Promise<Response>;
/** `peer` gives the address of the socket's other end; `cutOff` closes its connection (RequestNote). */
type ObservedHandler = (
  request: Request,
  peer?: () => string | undefined,
  cutOff?: () => void,
) => Response | Promise<Response>;

export interface ObserveDeps {
  access: (line: AccessLine) => void;
  notes: RequestNotes;
  metrics: Metrics;
  /** The app's routes: their patterns label the logs and metrics. */
  routes: readonly RouteLike[];
}

const noAddress = () => undefined;

/** The path of an absolute URL, without its query: the query may hold anything, even a token. */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const query = url.indexOf("?", start);
  return query < 0 ? url.slice(start) : url.slice(start, query);
}

const MAX_LOGGED_PATH = 200;
const shortened = (path: string) => (path.length > MAX_LOGGED_PATH ? `${path.slice(0, MAX_LOGGED_PATH)}…` : path);

/**
 * Gives every request an id (echoed as X-Request-Id), one access-log line and its metrics. The
 * line holds the route pattern, never the query, headers or body; a 404's also holds the path.
 */
export function observed(handle: Handler, { access, notes, metrics, routes }: ObserveDeps): ObservedHandler {
  function finish(request: Request, note: RequestNote, started: number, response: Response): Response {
    const elapsed = performance.now() - started;
    response.headers.set("x-request-id", note.id);
    record(request, note, response.status, elapsed);
    return response;
  }

  function record(request: Request, note: RequestNote, status: number, elapsed: number) {
    const path = pathOf(request.url);
    const route = routePatternFor(routes, path) ?? "unmatched";
    metrics.requestFinished(request.method, route, status, elapsed / 1000);
    access({
      reqId: note.id,
      method: request.method,
      route,
      status,
      ms: Math.round(elapsed * 1000) / 1000,
      userId: note.userId,
      client: note.client,
      path: status === 404 ? shortened(path) : undefined,
    });
  }

  return (request, peer = noAddress, cutOff) => {
    const started = performance.now();
    const id = requestIdFor(request.headers.get("x-request-id"));
    const note: RequestNote = { id, userId: undefined, peer, cutOff };
    notes.set(request, note);
    metrics.requestStarted();
    let result: Response | Promise<Response>;
    try {
      result = handle(request);
    } catch (error) {
      record(request, note, 500, performance.now() - started);
      throw error;
    }
    if (!(result instanceof Promise)) return finish(request, note, started, result);
    return result.then(
      (response) => finish(request, note, started, response),
      (error) => {
        record(request, note, 500, performance.now() - started);
        throw error;
      },
    );
  };
}
