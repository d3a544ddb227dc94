import { t } from "elysia";
import { Integer } from "./types";

export const errorModels = {
  Error: t.Object(
    {
      error: Integer("The HTTP status code"),
      message: t.String({ description: "What went wrong, in a sentence a person can act on" }),
    },
    { description: "The body of every error response" },
  ),
};

/** What a 400 for a malformed `{id}` path segment of an int32 id means (webhooks, tokens). */
export const BAD_PATH_ID = "The path's id is not an integer from 1 to 2147483647";

/** Statuses that mean the same on every route; the others each route states with `routeErrors`. */
const SHARED_MEANINGS: Record<number, string> = {
  401: "No valid bearer token: none was sent, or it is unknown, revoked or expired (see WWW-Authenticate)",
  408: "The body did not arrive in time; the connection is closed",
  413: "The body is over the size limit (BODY_LIMIT_BYTES)",
  415: "The body is not JSON (application/json, or application/merge-patch+json for PATCH)",
  429: "Too many requests for this token, or too many failed authentications from your address; retry after Retry-After",
  500: "Unexpected server fault; the detail is in the server log",
  503: "The service is at capacity, its store is busy, failing or damaged, or it is shutting down; retry after Retry-After",
  507: "The store is out of disk space; nothing was saved",
};

const json = (schema: object, example?: object) => ({ "application/json": { schema, ...(example && { example }) } });

/** An error response with the Error body; its example shows the real status (Swagger UI would show 0). */
export const routeError = (status: number, description: string) => ({
  description,
  content: json({ $ref: "#/components/schemas/Error" }, { error: status, message: description }),
});

export function routeErrors(meanings: Record<number, string>) {
  return Object.fromEntries(
    Object.entries(meanings).map(([status, meaning]) => [status, routeError(Number(status), meaning)]),
  );
}

export const errorResponses = (...statuses: number[]) =>
  routeErrors(Object.fromEntries(statuses.map((status) => [status, SHARED_MEANINGS[status] ?? "Error"])));

export function modelResponse(description: string, model: string, options: { array?: boolean } = {}) {
  const ref = { $ref: `#/components/schemas/${model}` };
  return { description, content: json(options.array ? { type: "array", items: ref } : ref) };
}

/** A list's `Link` header, naming the next page. */
export const linkHeader = (description: string) => ({ Link: { description, schema: { type: "string" as const } } });

/** What every answer to an authenticated request says of the token's budget (unless the limit is off). */
export const RATE_LIMIT_HEADERS = {
  "RateLimit-Policy": {
    description:
      'The per-token limit (draft-ietf-httpapi-ratelimit-headers): `"per-token";q=<requests>;w=60`. Absent when RATE_LIMIT_PER_MINUTE is 0',
    schema: { type: "string" as const },
    example: '"per-token";q=600;w=60',
  },
  RateLimit: {
    description:
      "What is left of it: `r` requests, `t` seconds until one is allowed again (0 while some remain). " +
      "Across instances on PostgreSQL, `r` is this instance's estimate",
    schema: { type: "string" as const },
    example: '"per-token";r=599;t=0',
  },
};
