import { type AnyElysia, Elysia } from "elysia";
import { HttpError } from "../http/errors";
import { DOCUMENTATION } from "./document";
import { type Document, documentedPaths, type Paths, withoutSchemaIds } from "./paths";
import { ASSETS_PATH, assets, DOCUMENT_PATH, swaggerPage } from "./swagger-page";

/** A 1×1 transparent PNG: browsers ask for /favicon.ico with every page, and a 404 was the page's one console error. */
const FAVICON = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64",
);
const FAVICON_HEADERS = { "content-type": "image/png", "cache-control": "public, max-age=86400" };

/** The document for every route of the app `docs` is part of; the generator loads on first demand, not at start. */
async function buildDocument(docs: AnyElysia): Promise<Document> {
  const { toOpenAPISchema } = await import("@elysiajs/openapi");
  const { paths, components } = toOpenAPISchema(docs, undefined, undefined, undefined, DOCUMENTATION.openapi);
  return {
    ...DOCUMENTATION,
    paths: documentedPaths({ ...paths } as Paths),
    components: { ...DOCUMENTATION.components, schemas: withoutSchemaIds({ ...components.schemas }) },
  };
}

/** `persistAuthorization`: Swagger UI keeps the token in localStorage (SWAGGER_PERSIST_AUTHORIZATION). */
export function apiDocs(persistAuthorization: boolean) {
  const docs = new Elysia({ name: "api-docs", detail: { hide: true } });
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
      .get(DOCUMENT_PATH, served)
      .get("/openapi.json", served)
      // Elysia answers /swagger/ here too; the page names its document and assets by absolute path.
      .get("/swagger", page)
      .get("/favicon.ico", () => new Response(FAVICON, { headers: FAVICON_HEADERS }))
      .get(`${ASSETS_PATH}/:file`, ({ params }) => {
        const asset = assets.get(params.file);
        if (!asset) throw new HttpError(404, "No such documentation asset.");
        return new Response(Bun.file(asset.path), {
          headers: { "content-type": asset.type, "cache-control": "public, max-age=86400" },
        });
      })
  );
}
