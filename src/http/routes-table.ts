export interface RouteLike {
  method: string;
  path: string;
}

const cache = new WeakMap<readonly RouteLike[], Array<{ pattern: RegExp; method: string }>>();

function compile(routes: readonly RouteLike[]) {
  let compiled = cache.get(routes);
  if (!compiled) {
    // Wildcard routes (CORS preflight answers OPTIONS on "/*") would make every path "known".
    compiled = routes
      .filter((route) => !route.path.includes("*"))
      .map((route) => ({
        method: route.method,
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

/** The methods routed for a concrete path: what a 405's Allow header lists. */
export function allowedMethodsFor(routes: readonly RouteLike[], path: string): string[] {
  const methods = compile(routes)
    .filter((route) => route.pattern.test(path))
    .map((route) => route.method);
  return [...new Set(methods)].sort();
}
