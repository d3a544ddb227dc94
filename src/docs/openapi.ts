import { type AnyElysia, Elysia } from "elysia";
import { HttpError } from "../http/errors";
import { RATE_LIMIT_HEADERS } from "../http/models";
import { ASSETS_PATH, assets, DOCUMENT_PATH, swaggerPage } from "./swagger-page";

type Schemas = Record<string, Record<string, unknown>>;
type Document = { components?: { schemas?: Schemas }; [key: string]: unknown };

/**
 * Elysia gives each model `$id: "#/components/schemas/<Name>"` and the generator copies it
 * into the document, where in OpenAPI 3.1 a `$id` changes how references resolve: Swagger UI
 * then fails on every `$ref`. The copy leaves the live models alone.
 */
function withoutSchemaIds(document: Document): Document {
  const schemas = document.components?.schemas;
  if (!schemas) return document;
  const cleaned = Object.fromEntries(Object.entries(schemas).map(([name, { $id: _, ...schema }]) => [name, schema]));
  return { ...document, components: { ...document.components, schemas: cleaned } };
}

type Operation = Record<string, unknown> & {
  parameters?: unknown[];
  requestBody?: { content: object };
  security?: unknown[];
  responses?: Record<string, { headers?: object }>;
};

/**
 * The generator writes path and query parameters over a route's own, and gives a body only
 * application/json: a route's `detail` adds header parameters as `x-parameters` and names its
 * body's media types as `x-media-types`, moved into place here.
 */
function withRouteExtras(paths: Record<string, Record<string, Operation>>) {
  for (const operations of Object.values(paths)) {
    for (const [method, { "x-parameters": extra, "x-media-types": types, ...operation }] of Object.entries(
      operations,
    )) {
      if (Array.isArray(extra)) operation.parameters = [...(operation.parameters ?? []), ...extra];
      const schema = Object.values(operation.requestBody?.content ?? {})[0];
      if (Array.isArray(types) && operation.requestBody && schema)
        operation.requestBody = {
          ...operation.requestBody,
          content: Object.fromEntries(types.map((t) => [t, schema])),
        };
      operations[method] = operation;
    }
  }
  return paths;
}

const RETRY_AFTER = { description: "Whole seconds to wait before retrying", schema: { type: "integer" as const } };

/**
 * The token's budget is on every answer once the token is known, so every response of an
 * authenticated operation declares it, but a 401; a 429 also says when to retry.
 */
function withRateLimitHeaders(paths: Record<string, Record<string, Operation>>) {
  for (const operation of Object.values(paths).flatMap((operations) => Object.values(operations))) {
    if (operation.security?.length === 0) continue;
    // New objects: the routes' own (some shared between operations) stay as they are.
    operation.responses = Object.fromEntries(
      Object.entries(operation.responses ?? {}).map(([status, response]) => {
        if (status === "401") return [status, response];
        const extra = status === "429" ? { ...RATE_LIMIT_HEADERS, "Retry-After": RETRY_AFTER } : RATE_LIMIT_HEADERS;
        return [status, { ...response, headers: { ...response.headers, ...extra } }];
      }),
    );
  }
  return paths;
}

const header = (name: string, description: string, example: string) => ({
  in: "header" as const,
  name,
  required: true,
  description,
  schema: { type: "string" as const },
  example,
});

/**
 * The interface's one webhook, as the original document declares it: what a registered
 * endpoint receives for every plant its owner creates (src/webhooks).
 */
const PLANT_WEBHOOK = {
  "/plant/webhook": {
    post: {
      summary: "A new plant was added to the store",
      description:
        "Sent to each of the owner's enabled endpoints (`POST /webhooks`) for every plant created (a 200 from " +
        "`POST /plants`, never a 409), with the NewPlant exactly as stored, its id an exact 64-bit integer. " +
        "Signed per Standard Webhooks: verify `webhook-signature` before trusting the body, and use `webhook-id` " +
        "to ignore a repeat. A 2xx within 10 s is delivered; anything else (a redirect included) is retried " +
        "after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, honouring Retry-After; 410 disables the endpoint.",
      operationId: "plantCreated",
      tags: ["webhooks"],
      security: [],
      parameters: [
        header("webhook-id", "The delivery's id; the same on every retry", "msg_2b9c4d…"),
        header(
          "webhook-timestamp",
          "Unix seconds when this attempt was made; refuse one far from your clock",
          "1614265330",
        ),
        header(
          "webhook-signature",
          'v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>", keyed with the base64-decoded secret after "whsec_">',
          "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
        ),
      ],
      requestBody: {
        description: "Information about a new plant added to the store",
        required: true,
        content: { "application/json": { schema: { $ref: "#/components/schemas/NewPlant" } } },
      },
      responses: {
        "200": { description: "Any 2xx: delivered. 410: stop sending to this endpoint. Anything else is retried." },
      },
    },
  },
};

export interface ApiDocsOptions {
  /** Whether Swagger UI keeps the token in localStorage (SWAGGER_PERSIST_AUTHORIZATION). */
  persistAuthorization: boolean;
}

/** What @elysiajs/openapi would be given; it merges it over what it derives from the routes. */
const DOCUMENTATION = {
  info: {
    title: "Plant Store",
    description: "Stores plants for the users who own them.",
    version: "1.0.0",
    license: { name: "MIT", url: "https://opensource.org/licenses/MIT" },
  },
  components: {
    securitySchemes: {
      bearerAuth: { type: "http", scheme: "bearer", description: "A token from `bun run cli token create`" },
    },
  },
  security: [{ bearerAuth: [] }],
  tags: [
    { name: "plants", description: "Your plants" },
    { name: "webhooks", description: "Endpoints told of every plant you create (the `plant.created` webhook)" },
  ],
  webhooks: PLANT_WEBHOOK,
};
const OPENAPI_VERSION = "3.1.2";

/**
 * The document for every route of the app `docs` is part of, in the shape @elysiajs/openapi's
 * plugin gives it (the same keys in the same order). The generator is loaded here, on the first
 * request for the document, rather than at start: its import was about a tenth of a cold start.
 */
async function buildDocument(docs: AnyElysia): Promise<Document> {
  const { toOpenAPISchema } = await import("@elysiajs/openapi");
  const { paths, components } = toOpenAPISchema(docs, undefined, undefined, undefined, OPENAPI_VERSION);
  return withoutSchemaIds({
    ...DOCUMENTATION,
    openapi: OPENAPI_VERSION,
    tags: DOCUMENTATION.tags,
    info: DOCUMENTATION.info,
    paths: withRateLimitHeaders(withRouteExtras({ ...paths } as Record<string, Record<string, Operation>>)),
    components: { ...DOCUMENTATION.components, schemas: { ...components.schemas } },
  });
}

export function apiDocs({ persistAuthorization }: ApiDocsOptions) {
  const docs = new Elysia({ name: "api-docs" });
  // Built once, on first demand: the routes are all in place by the time a request comes.
  let document: Promise<Document> | undefined;
  const served = () => {
    document ??= buildDocument(docs).catch((error: unknown) => {
      document = undefined;
      throw error;
    });
    return document;
  };
  const page = swaggerPage(persistAuthorization);
  return (
    docs
      // /openapi.json is where most tools look first; Swagger UI reads /swagger/json. One document.
      .get(DOCUMENT_PATH, served, { detail: { hide: true } })
      .get("/openapi.json", served, { detail: { hide: true } })
      // Elysia answers /swagger/ here too; the page names its document and assets by absolute path.
      .get("/swagger", page, { detail: { hide: true } })
      .get(
        `${ASSETS_PATH}/:file`,
        ({ params }) => {
          const asset = assets.get(params.file);
          if (!asset) throw new HttpError(404, "No such documentation asset.");
          return new Response(Bun.file(asset.path), {
            headers: { "content-type": asset.type, "cache-control": "public, max-age=86400" },
          });
        },
        { detail: { hide: true } },
      )
  );
}
