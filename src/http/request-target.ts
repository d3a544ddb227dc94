// Elysia finds the path by searching for "/" from index 11 of the URL Bun builds from Host. A bare
// path (no valid Host) or a 1-3 character host breaks that: such requests get a fixed host.
const ROUTABLE_ORIGIN = /^https?:\/\/(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?\//;
const MIN_PATH_START = 11;

export const UNADDRESSABLE = "The request target must be a path such as /plants.";

/** The request as Elysia can route it (itself, mostly), or undefined when its target has no path to route. */
export function addressable(request: Request): Request | undefined {
  const url = request.url;
  if (url.charCodeAt(0) === 47 /* "/" */) return readdressed(request, url);
  if (!ROUTABLE_ORIGIN.test(url)) {
    // An absolute URL with a host Bun accepted but no URL parser would ("http://[::1/a").
    const path = /^[a-z]+:\/\/[^/]*(\/.*)$/i.exec(url)?.[1];
    return path === undefined ? undefined : readdressed(request, path);
  }
  // The origin matched: no "/" comes before its path's.
  const pathStart = url.indexOf("/", url.indexOf("//") + 2);
  return pathStart >= MIN_PATH_START ? request : readdressed(request, url.slice(pathStart));
}

/** The same body stream: a wrapping `new Request(url, request)`, once cancelled, waits for the whole body. */
function readdressed(request: Request, path: string): Request {
  const { method, headers, body } = request;
  return new Request(`http://localhost${path}`, { method, headers, body });
}
