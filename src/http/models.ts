import { t } from "elysia";

export const errorModels = {
  Error: t.Object(
    {
      // Unsafe: t.Integer would be documented as "integer or numeric string".
      error: t.Unsafe<number>({ type: "integer", description: "The HTTP status code" }),
      message: t.String({ description: "What went wrong, in a sentence a person can act on" }),
    },
    { description: "The body of every error response" },
  ),
};

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: "The request is invalid; the message names the field and the rule",
  401: "No valid bearer token (see WWW-Authenticate)",
  404: "Not among your plants",
  408: "The body did not arrive in time; the connection is closed",
  409: "You already have a plant with this id",
  412: "If-Match: the plant has changed since you read its ETag (or a weak tag was sent); nothing was changed",
  413: "The body is over the size limit",
  415: "The body is not JSON (application/json, or application/merge-patch+json for PATCH)",
  429: "Too many requests, or too many failed authentications from your address; retry after Retry-After",
  500: "Unexpected server fault; the detail is in the server log",
  503: "The service is at capacity, its store is busy or failing, or it is shutting down; retry after Retry-After",
  507: "The store is out of disk space; nothing was saved",
};

const json = (schema: object) => ({ "application/json": { schema } });

/** OpenAPI response objects for error statuses, all with the Error body. */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      {
        description: ERROR_DESCRIPTIONS[status] ?? "Error",
        content: json({ $ref: "#/components/schemas/Error" }),
      },
    ]),
  );
}

/** An OpenAPI response object whose body is a component schema, or an array of them. */
export function modelResponse(description: string, model: string, options: { array?: boolean } = {}) {
  const ref = { $ref: `#/components/schemas/${model}` };
  return { description, content: json(options.array ? { type: "array", items: ref } : ref) };
}

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
