import type { Scope } from "../core/tokens";

export interface RouteLike {
  method: string;
  path: string;
  /** The `scope` option (auth/plugin.ts), kept as its OpenAPI security. */
  hooks?: { detail?: { security?: Array<Record<string, string[]>> } };
}

type Compiled = { pattern: RegExp; method: string; path: string; scope: string | undefined };
const cache = new WeakMap<readonly RouteLike[], Compiled[]>();

function compile(routes: readonly RouteLike[]) {
  let compiled = cache.get(routes);
  if (!compiled) {
    // Wildcard routes (CORS preflight answers OPTIONS on "/*") would make every path "known".
    compiled = routes
      .filter((route) => !route.path.includes("*"))
      .map((route) => ({
        method: route.method,
        path: route.path,
        scope: route.hooks?.detail?.security?.[0]?.bearerAuth?.[0],
        pattern: new RegExp(
          `^${route.path
            .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
            .replace(/:[^/]+/g, "[^/]+")
            .replace(/\*/g, ".*")}/?$`,
        ),
      }));
    cache.set(routes, compiled);
  }
  return compiled;
}

/** The scope a route declared; a route behind the bearer check that declares none is a bug, so it throws. */
export function scopeOfRoute(routes: readonly RouteLike[], method: string, path: string): Scope {
  const wanted = method === "HEAD" ? "GET" : method;
  const scope = compile(routes).find((route) => route.path === path && route.method === wanted)?.scope;
  if (!scope) throw new Error(`the route ${method} ${path} declares no scope`);
  return scope as Scope;
}

const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
const methodRank = (method: string) => {
  const rank = METHOD_ORDER.indexOf(method);
  return rank < 0 ? METHOD_ORDER.length : rank;
};

/**
 * The route pattern of a path ("/plants/:id"), for logs, metrics and a 405's Allow: a path of its
 * own (`/plants/changes`) hides the pattern it also fits (`/plants/:id`), as the router does.
 */
export function routePatternFor(routes: readonly RouteLike[], path: string): string | undefined {
  let pattern: string | undefined;
  for (const route of compile(routes)) {
    if (!route.pattern.test(path)) continue;
    if (!route.path.includes(":")) return route.path;
    pattern ??= route.path;
  }
  return pattern;
}

/** What a 405's Allow header lists: the methods routed for the path's pattern. */
export function allowedMethodsFor(routes: readonly RouteLike[], path: string): string[] {
  const pattern = routePatternFor(routes, path);
  const methods = compile(routes)
    .filter((route) => route.path === pattern)
    .map((route) => route.method);
  return [...new Set(methods)].sort((a, b) => methodRank(a) - methodRank(b));
}
