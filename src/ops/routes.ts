import { Elysia } from "elysia";
import type { StoreFailureKind } from "../core/failures";
import { type FaultLog, faultDetail } from "../core/fault";
import { DAMAGED_READINESS_MESSAGE, type StoreHealth } from "../core/health";
import type { StoreStatus } from "../core/stores";
import { within } from "../core/timers";
import { errorResponse } from "../http/errors";

export interface Lifecycle {
  state: "starting" | "ready" | "draining";
}

export interface OpsRoutesDeps {
  lifecycle: Lifecycle;
  status: Pick<StoreStatus, "ping" | "problem">;
  health: StoreHealth;
  log: FaultLog;
}

const NO_STORE = { "cache-control": "no-store" };

const STORE_PROBLEMS: Record<StoreFailureKind, string> = {
  capacity: "The service is at capacity.",
  busy: "The store is busy.",
  full: "Writes are failing: the store is out of disk space.",
  io: "Writes are failing: the store cannot write to its disk.",
  corrupt: "The store's database is damaged.",
  unreachable: "The store's database cannot be reached.",
  timeout: "The store's database does not answer in time.",
};

/** A load balancer's probe waits about this long; a ping that takes longer counts as no answer. */
const PING_DEADLINE_MS = 2_000;

/** Unauthenticated, outside the rate limit, and left out of the OpenAPI document. */
export function opsRoutes({ lifecycle, status, health, log }: OpsRoutesDeps) {
  return new Elysia({ name: "ops", detail: { hide: true } })
    .get("/healthz", ({ set }) => {
      set.headers["cache-control"] = "no-store";
      return { status: "ok" };
    })
    .get("/readyz", async ({ request, set }) => {
      if (health.damaged) return errorResponse(503, DAMAGED_READINESS_MESSAGE, NO_STORE);
      if (lifecycle.state !== "ready") {
        return errorResponse(503, `The service is ${lifecycle.state}.`, { ...NO_STORE, "retry-after": "1" });
      }
      try {
        await within(status.ping(), PING_DEADLINE_MS, () => new Error(`no answer within ${PING_DEADLINE_MS} ms`));
      } catch (error) {
        log("readiness check: the database does not answer", faultDetail(error), request);
        return errorResponse(503, "The database does not answer.", { ...NO_STORE, "retry-after": "1" });
      }
      const problem = status.problem();
      if (problem) return errorResponse(503, STORE_PROBLEMS[problem], { ...NO_STORE, "retry-after": "5" });
      set.headers["cache-control"] = "no-store";
      return { status: "ready" };
    });
}
