import { errorResponses, RATE_LIMIT_HEADERS, routeError } from "../http/models";

// What the paths need beyond what @elysiajs/openapi derives; each step copies, as routes share `detail`s.

type Schemas = Record<string, Record<string, unknown>>;
export type Document = { components?: { schemas?: Schemas }; [key: string]: unknown };
type Parameter = { in: string; example?: unknown; schema?: { examples?: unknown[] } };
type Operation = Record<string, unknown> & {
  parameters?: Parameter[];
  requestBody?: { content: object };
  security?: Array<Record<string, string[]>>;
  responses?: Record<string, { headers?: object; description?: string; content?: object }>;
};
export type Paths = Record<string, Record<string, Operation>>;

/** Elysia's model `$id`s, copied into an OpenAPI 3.1 document, change how `$ref`s resolve: Swagger UI fails. */
export const withoutSchemaIds = (schemas: Schemas): Schemas =>
  Object.fromEntries(Object.entries(schemas).map(([name, { $id: _, ...schema }]) => [name, schema]));

const eachOperation = (paths: Paths, change: (operation: Operation, method: string) => Operation): Paths =>
  Object.fromEntries(
    Object.entries(paths).map(([path, operations]) => [
      path,
      Object.fromEntries(Object.entries(operations).map(([method, operation]) => [method, change(operation, method)])),
    ]),
  );

/** What any authenticated operation may answer: with a body, its faults too; a write, 507. */
function withSharedErrors(operation: Operation, method: string): Operation {
  if (!operation.security?.length) return operation;
  const body = operation.requestBody ? [408, 413, 415] : [];
  const shared = errorResponses(401, 429, 500, 503, ...body, ...(method === "get" ? [] : [507]));
  return { ...operation, responses: { ...operation.responses, ...shared } };
}

/** The generator overwrites a route's parameters and gives a body only application/json; these `x-` keys fix it. */
function withRouteExtras({ "x-parameters": extra, "x-media-types": types, ...operation }: Operation): Operation {
  if (Array.isArray(extra)) operation.parameters = [...(operation.parameters ?? []), ...extra];
  const schema = Object.values(operation.requestBody?.content ?? {})[0];
  if (Array.isArray(types) && operation.requestBody && schema)
    operation.requestBody = { ...operation.requestBody, content: Object.fromEntries(types.map((t) => [t, schema])) };
  return operation;
}

/** A path parameter's example is its schema's first (the generator copies only the schema); Dredd needs one. */
function withPathExamples(operation: Operation): Operation {
  const parameters = operation.parameters?.map((parameter) => {
    const example = parameter.schema?.examples?.[0];
    return parameter.in === "path" && parameter.example === undefined && example !== undefined
      ? { ...parameter, example }
      : parameter;
  });
  return parameters ? { ...operation, parameters } : operation;
}

/** The scope an operation's security requirement names (auth/plugin.ts), said in its description and its 403. */
function withScope(operation: Operation): Operation {
  const scope = operation.security?.[0]?.bearerAuth?.[0];
  if (!scope) return operation;
  const needs = `Needs a token with the \`${scope}\` scope.`;
  const description = typeof operation.description === "string" ? `${operation.description} ${needs}` : needs;
  const refused = routeError(403, `The token lacks the \`${scope}\` scope (see WWW-Authenticate)`);
  return { ...operation, description, responses: { 403: refused, ...operation.responses } };
}

const RETRY_AFTER = { description: "Whole seconds to wait before retrying", schema: { type: "integer" as const } };
const wwwAuthenticate = (description: string, required: boolean, example: string) => ({
  "WWW-Authenticate": { description, required, schema: { type: "string" }, example },
});
const STATUS_HEADERS: Record<string, object> = {
  401: wwwAuthenticate(
    '`Bearer` when no token was sent; `Bearer error="invalid_token"` when it is unknown, revoked or expired',
    true,
    'Bearer error="invalid_token"',
  ),
  403: wwwAuthenticate(
    'When the token lacks the operation\'s scope (RFC 6750 §3.1): `Bearer error="insufficient_scope", scope="<scope>"`',
    false,
    'Bearer error="insufficient_scope", scope="plants:write"',
  ),
  429: { "Retry-After": { ...RETRY_AFTER, required: true } },
  503: {
    "Retry-After": {
      ...RETRY_AFTER,
      description: `${RETRY_AFTER.description}; absent when the store is damaged, which waiting does not mend`,
    },
  },
};

/** The headers a status carries, and the token's budget on an authenticated operation's answers but a 401. */
function withResponseHeaders(operation: Operation): Operation {
  const authenticated = operation.security?.length !== 0;
  const responses = Object.entries(operation.responses ?? {}).map(([status, response]) => {
    const budget = authenticated && status !== "401" ? RATE_LIMIT_HEADERS : {};
    const headers = { ...response.headers, ...budget, ...STATUS_HEADERS[status] };
    return [status, Object.keys(headers).length > 0 ? { ...response, headers } : response];
  });
  return { ...operation, responses: Object.fromEntries(responses) };
}

export const documentedPaths = (paths: Paths): Paths =>
  eachOperation(paths, (operation, method) =>
    withResponseHeaders(withSharedErrors(withScope(withPathExamples(withRouteExtras(operation))), method)),
  );
