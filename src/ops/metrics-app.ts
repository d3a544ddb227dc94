import { faultDetail } from "../core/fault";
import { errorResponse } from "../http/errors";
import { METRICS_CONTENT_TYPE, type Metrics } from "./metrics";
import { pathOf } from "./observe";

export interface MetricsAppDeps {
  metrics: Metrics;
  token: string | undefined;
  log(message: string, detail: unknown): void;
}

const digest = (text: string) => new Uint8Array(new Bun.CryptoHasher("sha256").update(text).digest());

/** Compares digests, so the time taken says nothing about how much of the token matched. */
function tokenMatches(header: string | null, expected: Uint8Array): boolean {
  const given = header?.match(/^Bearer[ \t]+(\S+)\s*$/i)?.[1];
  return given !== undefined && crypto.timingSafeEqual(digest(given), expected);
}

/** `GET /metrics` only: a plain handler, as one route needs no router and it keeps start-up cheap. */
export function createMetricsApp({ metrics, token, log }: MetricsAppDeps) {
  const expected = token === undefined ? undefined : digest(token);
  const headers = { "x-content-type-options": "nosniff", "cache-control": "no-store" };
  return (request: Request): Response => {
    if (pathOf(request.url) !== "/metrics") return errorResponse(404, "No route matches this path.", headers);
    if (request.method !== "GET" && request.method !== "HEAD") {
      return errorResponse(405, "This path accepts only GET, HEAD.", { ...headers, allow: "GET, HEAD" });
    }
    if (expected && !tokenMatches(request.headers.get("authorization"), expected)) {
      return errorResponse(401, "Metrics need the header Authorization: Bearer <METRICS_TOKEN>.", {
        ...headers,
        "www-authenticate": 'Bearer realm="metrics"',
      });
    }
    try {
      return new Response(metrics.render(), { headers: { ...headers, "content-type": METRICS_CONTENT_TYPE } });
    } catch (error) {
      log("metrics scrape failed", faultDetail(error));
      return errorResponse(500, "Internal server error; the failure has been logged.", headers);
    }
  };
}
