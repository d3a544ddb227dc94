import { Elysia, type ValidationError } from "elysia";
import { type StoreFailureKind, storeFailureKind } from "../core/failures";
import { type FaultLog, faultDetail } from "../core/fault";
import { DAMAGED_LOG_MESSAGE, DAMAGED_REQUEST_MESSAGE, type StoreHealth } from "../core/health";
import { describeRule } from "./types";

/** A failure the client can act on; its message is safe to show. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** What Bun writes for a JSON answer: every JSON answer, errors too, says the same. */
export const JSON_CONTENT_TYPE = "application/json;charset=utf-8";

/** A JSON answer's headers, with the next page's Link when there is one. */
export const jsonHeaders = (link?: string): Record<string, string> =>
  link ? { "content-type": JSON_CONTENT_TYPE, link } : { "content-type": JSON_CONTENT_TYPE };

export const errorJson = (status: number, message: string) => JSON.stringify({ error: status, message });

export function errorResponse(status: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(errorJson(status, message), {
    status,
    headers: { "content-type": JSON_CONTENT_TYPE, ...headers },
  });
}

const STATUS_MESSAGES: Record<number, string> = {
  400: "The request is malformed.",
  404: "No such resource.",
  413: "The request body is too large.",
  500: "Internal server error; the failure has been logged.",
};

type ValueError = { path: string; schema: unknown; value?: unknown; type?: number };

/** Names the field and the rule it breaks, never the value sent (it may be a secret or garbage). */
export function validationMessage(error: Readonly<ValidationError>): string {
  const where = error.type;
  const first = (error.all as ValueError[])[0];
  if (!first) return `${where}: is invalid`;
  const field = first.path.replace(/^\//, "").replaceAll("/", ".");
  // JSON has no undefined: a field whose value is undefined was left out.
  if (first.value === undefined && field !== "") return `${field}: is required`;
  return `${field || where}: ${describeRule(first.schema, first.value)}`;
}

const RETRY_IS_SAFE = "Retrying a create or delete is safe: it answers 409 or 404 if the first attempt went through.";

const STORE_FAILURES: Record<StoreFailureKind, { status: number; message: string; retryAfter?: string }> = {
  capacity: { status: 503, message: "The service is at capacity; retry in a moment.", retryAfter: "1" },
  busy: {
    status: 503,
    message:
      "The store is busy: a lock held by other work kept this request waiting. Nothing was changed; retry in a moment.",
    retryAfter: "1",
  },
  full: {
    status: 507,
    message: "The store is out of disk space. Nothing was saved; retry once space has been freed.",
  },
  io: {
    status: 503,
    message: "The store cannot read or write its disk. Nothing was saved; retry in a moment.",
    retryAfter: "5",
  },
  corrupt: { status: 503, message: DAMAGED_REQUEST_MESSAGE },
  // A connection can break after a write was sent: neither of these can say "nothing was changed".
  unreachable: {
    status: 503,
    message: `The store's database cannot be reached; retry in a moment. ${RETRY_IS_SAFE}`,
    retryAfter: "5",
  },
  timeout: {
    status: 503,
    message: `The store's database did not answer in time; retry in a moment. ${RETRY_IS_SAFE}`,
    retryAfter: "5",
  },
};

/** While a store failure lasts, its requests are logged once in this long, with a count of the rest. */
export const STORE_FAILURE_LOG_EVERY_MS = 5_000;

/** The Error body for a handler's or a store's fault; anything unknown is a logged 500, damage turns readiness off. */
export function faultResponder({ log, health, clock }: { log: FaultLog; health: StoreHealth; clock: () => number }) {
  const lastLogged = new Map<StoreFailureKind, { at: number; unlogged: number }>();

  // A database gone for a minute would otherwise log every request that needed it.
  function logStoreFailure(kind: StoreFailureKind, error: unknown, request?: Request) {
    const last = lastLogged.get(kind);
    const now = clock();
    if (last && now - last.at < STORE_FAILURE_LOG_EVERY_MS) {
      last.unlogged++;
      return;
    }
    const unlogged = last?.unlogged ? `; ${last.unlogged} more since the last such line` : "";
    log(`store failure${unlogged}`, faultDetail(error), request);
    lastLogged.set(kind, { at: now, unlogged: 0 });
  }

  return (error: unknown, request?: Request): Response => {
    if (error instanceof HttpError) return errorResponse(error.status, error.message, error.headers);
    const storeFailure = storeFailureKind(error);
    if (storeFailure !== undefined) {
      // Space and busy are states an operator sees in readiness; damage and I/O are faults.
      if (health.noteFault(error)) log(DAMAGED_LOG_MESSAGE, faultDetail(error), request);
      else if (storeFailure === "io" || storeFailure === "unreachable" || storeFailure === "timeout")
        logStoreFailure(storeFailure, error, request);
      const { status, message, retryAfter } = STORE_FAILURES[storeFailure];
      return errorResponse(status, message, retryAfter ? { "retry-after": retryAfter } : {});
    }
    const status =
      typeof (error as { status?: unknown }).status === "number" ? (error as { status: number }).status : 500;
    if (status >= 400 && status < 500)
      return errorResponse(status, STATUS_MESSAGES[status] ?? "The request was refused.");
    log("unhandled error", faultDetail(error), request);
    return errorResponse(500, STATUS_MESSAGES[500] as string);
  };
}

export type FaultResponder = ReturnType<typeof faultResponder>;

const notAllowed = (allow: string[]) =>
  errorResponse(405, `This path accepts only ${allow.join(", ")}.`, { allow: allow.join(", ") });

export interface ErrorHandlerOptions {
  /** The methods routed for a path, so a wrong method gets 405 rather than 404. */
  allowedMethods(path: string): string[];
  answerFault: FaultResponder;
}

/** The one place where every failure becomes the Error body. */
export function errorHandler({ allowedMethods, answerFault }: ErrorHandlerOptions) {
  return new Elysia({ name: "error-handler" }).onError({ as: "global" }, ({ code, error, request }) => {
    // Elysia wraps whatever a parse hook throws in a ParseError.
    const cause = code === "PARSE" ? (error as Error).cause : error;
    if (cause instanceof HttpError) return errorResponse(cause.status, cause.message, cause.headers);
    switch (code) {
      case "VALIDATION":
      case "NOT_FOUND": {
        // A path routed for other methods; the router sends some to a pattern (PUT /plants/changes to /plants/:id).
        const allow = allowedMethods(new URL(request.url).pathname);
        const method = request.method === "HEAD" ? "GET" : request.method;
        if (allow.length > 0 && (code === "NOT_FOUND" || !allow.includes(method))) return notAllowed(allow);
        if (code === "NOT_FOUND") return errorResponse(404, "No route matches this path.");
        return errorResponse(400, validationMessage(error));
      }
      case "PARSE":
        return errorResponse(400, "body: must be a valid JSON document");
      case "INVALID_COOKIE_SIGNATURE":
      case "INVALID_FILE_TYPE":
        return errorResponse(400, STATUS_MESSAGES[400] as string);
    }
    return answerFault(error, request);
  });
}
