/**
 * Elysia routes on the URL Bun builds from the request line and the Host header, and finds
 * the path by searching for "/" from index 11. Bun hands over a bare path ("/x/plants") when
 * the Host header is missing, empty or not a valid host, and a host of 1 to 3 characters
 * ("http://x/plants") puts the path's own slash before index 11: either way Elysia would route
 * on the wrong part of the URL. Routing must depend on the path alone, so such requests are
 * re-addressed to a fixed host; nothing in the app reads the Host header.
 */

/** A host (name, IPv4 or bracketed IPv6, optional port) long enough for Elysia's search. */
const ROUTABLE_ORIGIN = /^https?:\/\/(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?\//;
const MIN_PATH_START = 11;

export const UNADDRESSABLE = "The request target must be a path such as /plants.";

export type Addressed = { request: Request } | { refused: true };

/** The request as the app can route it, or why it cannot be addressed at all. */
export function addressable(request: Request): Addressed {
  const url = request.url;
  if (url.charCodeAt(0) === 47 /* "/" */) return { request: readdressed(request, url) };
  const match = ROUTABLE_ORIGIN.exec(url);
  if (!match) {
    // An absolute URL with a host Bun accepted but no URL parser would ("http://[::1/a").
    const path = /^[a-z]+:\/\/[^/]*(\/.*)$/i.exec(url)?.[1];
    if (path === undefined) return { refused: true };
    return { request: readdressed(request, path) };
  }
  const pathStart = match[0].length - 1;
  return { request: pathStart >= MIN_PATH_START ? request : readdressed(request, url.slice(pathStart)) };
}

/**
 * The body is handed over as the same stream: `new Request(url, request)` would wrap it, and
 * cancelling the wrapper (as an over-limit body is given up) waits for the whole body to arrive.
 */
function readdressed(request: Request, path: string): Request {
  const { method, headers, body } = request;
  return new Request(`http://localhost${path}`, { method, headers, body });
}
