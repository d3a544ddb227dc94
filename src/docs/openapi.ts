import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import swaggerCss from "swagger-ui-dist/swagger-ui.css" with { type: "file" };
import swaggerBundle from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
import { HttpError } from "../http/errors";

const ASSETS_PATH = "/swagger/assets";

/** Served by the service itself so the page works with no internet access. */
const assets = new Map([
  ["swagger-ui-bundle.js", { path: swaggerBundle, type: "text/javascript; charset=utf-8" }],
  ["swagger-ui.css", { path: swaggerCss, type: "text/css; charset=utf-8" }],
]);

type Schemas = Record<string, Record<string, unknown>>;
type Document = { components?: { schemas?: Schemas } };

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

export function apiDocs() {
  // The plugin builds its document once and serves that object: clean it once too.
  const cleaned = new WeakMap<Document, Document>();
  return new Elysia({ name: "api-docs" })
    .onAfterHandle(({ path, response }) => {
      if (path !== "/swagger/json") return;
      const document = response as Document;
      let served = cleaned.get(document);
      if (!served) {
        served = withoutSchemaIds(document);
        cleaned.set(document, served);
      }
      return served;
    })
    .use(
      openapi({
        path: "/swagger",
        specPath: "/swagger/json",
        provider: "swagger-ui",
        swagger: {
          cdn: `${ASSETS_PATH}/swagger-ui-bundle.js`,
          theme: `${ASSETS_PATH}/swagger-ui.css`,
          autoDarkMode: false,
          persistAuthorization: true,
        },
        documentation: {
          info: {
            title: "Plant Store",
            version: "1.0.0",
            description: "Stores plants for the users who own them.",
            license: { name: "MIT", url: "https://opensource.org/licenses/MIT" },
          },
          components: {
            securitySchemes: {
              bearerAuth: { type: "http", scheme: "bearer", description: "A token from `bun run cli token create`" },
            },
          },
          security: [{ bearerAuth: [] }],
          tags: [{ name: "plants", description: "Your plants" }],
        },
      }),
    )
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
    );
}
