import { Elysia } from "elysia";
import { errorResponse, faultDetail } from "../http/errors";

/** Whether the process wants traffic: not before it listens, not once shutdown has begun. */
export interface Lifecycle {
  state: "starting" | "ready" | "draining";
}

export interface OpsRoutesDeps {
  lifecycle: Lifecycle;
  /** Runs a trivial query; throws when the database does not answer. */
  pingDatabase(): void;
  log(message: string, detail: unknown, request?: Request): void;
}

const NO_STORE = { "cache-control": "no-store" };
const hidden = { detail: { hide: true } };

/**
 * Health and readiness: unauthenticated, outside the rate limit, and left out of the API's
 * OpenAPI document. Metrics have their own listener (src/ops/metrics-app.ts).
 */
export function opsRoutes({ lifecycle, pingDatabase, log }: OpsRoutesDeps) {
  return new Elysia({ name: "ops" })
    .get(
      "/healthz",
      ({ set }) => {
        set.headers["cache-control"] = "no-store";
        return { status: "ok" };
      },
      hidden,
    )
    .get(
      "/readyz",
      ({ request, set }) => {
        if (lifecycle.state !== "ready") {
          return errorResponse(503, `The service is ${lifecycle.state}.`, { ...NO_STORE, "retry-after": "1" });
        }
        try {
          pingDatabase();
        } catch (error) {
          log("readiness check: the database does not answer", faultDetail(error), request);
          return errorResponse(503, "The database does not answer.", { ...NO_STORE, "retry-after": "1" });
        }
        set.headers["cache-control"] = "no-store";
        return { status: "ready" };
      },
      hidden,
    );
}
