import { describe, expect, test } from "bun:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { plantModels } from "../../src/plants/model";
import { makeTestApp } from "../support/helpers";

/** The parts of an OpenAPI document these tests read. */
interface OpenAPIDocument {
  info: unknown;
  security: unknown;
  paths: Record<string, Record<string, Operation>>;
  components: {
    securitySchemes: Record<string, unknown>;
    schemas: Record<string, { required: string[]; properties: Record<string, { type?: string }> }>;
  };
}
interface Operation {
  responses: Record<string, { content?: unknown }>;
  requestBody: { content: Record<string, { schema: unknown }> };
  parameters: unknown[];
  security?: Array<{ bearerAuth: string[] }>;
  description?: string;
}

const RATE_LIMIT = ["RateLimit-Policy", "RateLimit"];

async function fetchDocument() {
  const t = await makeTestApp();
  const response = await t.call("GET", "/swagger/json");
  expect(response.status).toBe(200);
  return { t, document: (await response.json()) as OpenAPIDocument };
}

function operation(document: OpenAPIDocument, path: string, method: string): Operation {
  const found = document.paths[path]?.[method];
  if (!found) throw new Error(`${method.toUpperCase()} ${path} is not documented`);
  return found;
}

describe("OpenAPI document at /swagger/json", () => {
  test("validates with a standard OpenAPI validator", async () => {
    const t = await makeTestApp();
    const raw = await (await t.call("GET", "/swagger/json")).text();
    await expect(SwaggerParser.validate(JSON.parse(raw))).resolves.toBeDefined();
  });

  test("declares title, version, MIT license and a global bearer scheme", async () => {
    const { document } = await fetchDocument();
    expect(document.info).toMatchObject({ title: "Plant Store", version: "1.0.0", license: { name: "MIT" } });
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    expect(document.security).toEqual([{ bearerAuth: [] }]);
  });

  test("has the Plant, NewPlant and Error component schemas", async () => {
    const { document } = await fetchDocument();
    const { Plant, NewPlant, Error: ErrorSchema } = document.components.schemas;
    if (!Plant || !NewPlant || !ErrorSchema) throw new Error("a component schema is missing");
    expect(Plant.required).toEqual(["name"]);
    // The document follows the model, which follows the schema (tests/unit/plant-model.test.ts).
    expect(Object.keys(Plant.properties)).toEqual(Object.keys(plantModels.Plant.properties));
    expect(Object.keys(Plant.properties)).toContain("tag");
    expect(NewPlant.required).toEqual(["id", "name"]);
    expect(NewPlant.properties.id).toMatchObject({ type: "integer", format: "int64" });
    expect(NewPlant.properties.name).toMatchObject({ type: "string", minLength: 1, maxLength: 256 });
    expect(NewPlant.properties.tag).toMatchObject({ type: "string", minLength: 0, maxLength: 256 });
    expect(ErrorSchema.required).toEqual(["error", "message"]);
    expect(ErrorSchema.properties.error?.type).toBe("integer");
  });

  test("declares every status the SPEC names on each operation", async () => {
    const { document } = await fetchDocument();
    const create = operation(document, "/plants", "post");
    const list = operation(document, "/plants", "get");
    const remove = operation(document, "/plants/{id}", "delete");
    const one = operation(document, "/plants/{id}", "get");
    const statuses = (op: Operation) => Object.keys(op.responses).sort();
    expect(statuses(one)).toEqual(["200", "304", "400", "401", "403", "404", "429", "500", "503"]);
    expect(statuses(create)).toEqual([
      "200",
      "400",
      "401",
      "403",
      "408",
      "409",
      "413",
      "415",
      "422",
      "429",
      "500",
      "503",
      "507",
    ]);
    expect(statuses(list)).toEqual(["200", "400", "401", "403", "429", "500", "503"]);
    expect(statuses(remove)).toEqual(["204", "400", "401", "403", "404", "412", "429", "500", "503", "507"]);
    expect(remove.responses["204"]?.content).toBeUndefined();
    expect(create.requestBody.content["application/json"]?.schema).toEqual({
      $ref: "#/components/schemas/NewPlant",
    });
    expect(list.parameters).toEqual([
      expect.objectContaining({
        name: "limit",
        in: "query",
        required: false,
        schema: expect.objectContaining({ type: "integer", minimum: 0, maximum: 2147483647 }),
      }),
      expect.objectContaining({
        name: "after",
        in: "query",
        required: false,
        schema: expect.objectContaining({ type: "integer", format: "int64" }),
      }),
      expect.objectContaining({
        name: "tag",
        in: "query",
        required: false,
        schema: expect.objectContaining({ type: "string", minLength: 0, maxLength: 256 }),
      }),
      expect.objectContaining({
        name: "fields",
        in: "query",
        required: false,
        schema: expect.objectContaining({ type: "string", examples: ["id,name"] }),
      }),
    ]);
    const fieldsOfOne = operation(document, "/plants/{id}", "get").parameters.find(
      (p) => (p as { name: string }).name === "fields",
    );
    expect(fieldsOfOne).toMatchObject({ in: "query", required: false, example: "id,name", schema: { type: "string" } });
    const ok = list.responses["200"] as { headers?: Record<string, unknown> };
    expect(Object.keys(ok.headers ?? {})).toEqual(["Link", ...RATE_LIMIT]);
  });

  test("declares PUT and PATCH, ETag on one-plant answers, If-Match, If-None-Match, 304 and 412", async () => {
    const { document } = await fetchDocument();
    const statuses = (op: Operation) => Object.keys(op.responses).sort();
    const replace = operation(document, "/plants/{id}", "put");
    const patch = operation(document, "/plants/{id}", "patch");
    const writeStatuses = ["200", "400", "401", "403", "404", "408", "412", "413", "415", "429", "500", "503", "507"];
    expect(statuses(replace)).toEqual(writeStatuses);
    expect(statuses(patch)).toEqual(writeStatuses);
    expect(replace.requestBody.content).toEqual({
      "application/json": { schema: { $ref: "#/components/schemas/PlantReplacement" } },
    });
    expect(Object.keys(patch.requestBody.content)).toEqual(["application/merge-patch+json", "application/json"]);
    const header = (op: Operation, name: string) =>
      op.parameters.find(
        (p) => (p as { in: string; name: string }).in === "header" && (p as { name: string }).name === name,
      );
    for (const op of [replace, patch, operation(document, "/plants/{id}", "delete")])
      expect(header(op, "If-Match")).toMatchObject({ required: false, schema: { type: "string" } });
    const one = operation(document, "/plants/{id}", "get");
    expect(header(one, "If-None-Match")).toMatchObject({ required: false });
    const create = operation(document, "/plants", "post");
    for (const op of [one, replace, patch, create]) {
      const ok = op.responses["200"] as { headers?: Record<string, unknown> };
      // A create's answer may be the kept one of an earlier request with its Idempotency-Key.
      const replayed = op === create ? ["Idempotent-Replayed"] : [];
      expect(Object.keys(ok.headers ?? {})).toEqual(["ETag", ...replayed, ...RATE_LIMIT]);
    }
    expect(Object.keys((one.responses["304"] as { headers?: object }).headers ?? {})).toEqual(["ETag", ...RATE_LIMIT]);
    expect(document.components.schemas.PlantPatch?.properties.tag).toBeDefined();
  });

  test("every authenticated answer but the 401 declares RateLimit-Policy and RateLimit; the 429 and 503 Retry-After (and a create's 409, for a key in progress), the 401 and 403 WWW-Authenticate", async () => {
    const { document } = await fetchDocument();
    const declared = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations).flatMap(([method, op]) =>
        Object.entries(op.responses).map(([status, response]): [string, boolean, boolean, boolean] => {
          const names = Object.keys((response as { headers?: object }).headers ?? {});
          return [
            `${method} ${path} ${status}`,
            RATE_LIMIT.every((name) => names.includes(name)),
            names.includes("Retry-After"),
            names.includes("WWW-Authenticate"),
          ];
        }),
      ),
    );
    expect(declared.length).toBeGreaterThan(50);
    expect(declared).toEqual(
      declared.map(([name]) => [
        name,
        !name.endsWith(" 401"),
        name.endsWith(" 429") || name.endsWith(" 503") || name === "post /plants 409",
        name.endsWith(" 401") || name.endsWith(" 403"),
      ]),
    );
  });

  test("each operation names its scope: a security requirement, a sentence in its description, a 403", async () => {
    const { document } = await fetchDocument();
    const scopes = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, op]) => {
        const scope = op.security?.[0]?.bearerAuth[0] ?? "";
        const said = String(op.description).includes(`\`${scope}\` scope`);
        return [`${method} ${path}`, scope, said, "403" in op.responses];
      }),
    );
    const expected: Record<string, string> = {
      "get /plants": "plants:read",
      "post /plants": "plants:write",
      "get /plants/changes": "plants:read",
      "get /plants/{id}": "plants:read",
      "put /plants/{id}": "plants:write",
      "patch /plants/{id}": "plants:write",
      "delete /plants/{id}": "plants:write",
      "get /webhooks": "webhooks",
      "post /webhooks": "webhooks",
      "delete /webhooks/{id}": "webhooks",
      "get /webhooks/{id}/deliveries": "webhooks",
      "get /tokens": "tokens",
      "post /tokens": "tokens",
      "delete /tokens/{id}": "tokens",
    };
    expect(Object.fromEntries(scopes.map(([name, scope]) => [name, scope]))).toEqual(expected);
    for (const [name, , said, refused] of scopes) expect([name, said, refused]).toEqual([name, true, true]);
  });

  test("documents only the API: the Swagger routes, health, readiness and metrics are hidden", async () => {
    const { document } = await fetchDocument();
    expect(Object.keys(document.paths).sort()).toEqual([
      "/plants",
      "/plants/changes",
      "/plants/{id}",
      "/tokens",
      "/tokens/{id}",
      "/webhooks",
      "/webhooks/{id}",
      "/webhooks/{id}/deliveries",
    ]);
  });

  test("declares the interface's /plant/webhook with the NewPlant body and the three signing headers", async () => {
    const { document } = await fetchDocument();
    const webhook = (document as unknown as { webhooks: Record<string, Record<string, Operation>> }).webhooks[
      "/plant/webhook"
    ]?.post;
    if (!webhook) throw new Error("webhooks./plant/webhook.post is missing");
    expect(webhook.requestBody.content["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/NewPlant" });
    expect(webhook.parameters).toEqual(
      ["webhook-id", "webhook-timestamp", "webhook-signature"].map((name) =>
        expect.objectContaining({ in: "header", name, required: true }),
      ),
    );
  });

  test("documents the webhook routes with their statuses and models", async () => {
    const { document } = await fetchDocument();
    const statuses = (op: Operation) => Object.keys(op.responses).sort();
    const register = operation(document, "/webhooks", "post");
    expect(statuses(register)).toEqual([
      "201",
      "400",
      "401",
      "403",
      "408",
      "409",
      "413",
      "415",
      "429",
      "500",
      "503",
      "507",
    ]);
    expect(register.requestBody.content["application/json"]?.schema).toEqual({
      $ref: "#/components/schemas/NewWebhook",
    });
    expect(statuses(operation(document, "/webhooks", "get"))).toEqual(["200", "401", "403", "429", "500", "503"]);
    expect(statuses(operation(document, "/webhooks/{id}", "delete"))).toEqual([
      "204",
      "400",
      "401",
      "403",
      "404",
      "429",
      "500",
      "503",
      "507",
    ]);
    const log = operation(document, "/webhooks/{id}/deliveries", "get");
    expect(statuses(log)).toEqual(["200", "400", "401", "403", "404", "429", "500", "503"]);
    expect(log.parameters.map((p) => (p as { name: string }).name).sort()).toEqual(["after", "id", "limit"]);
    const { RegisteredWebhook, Webhook, Delivery } = document.components.schemas;
    expect(Object.keys(RegisteredWebhook?.properties ?? {}).sort()).toEqual(["id", "secret", "url"]);
    expect(Object.keys(Webhook?.properties ?? {}).sort()).toEqual(["createdAt", "disabled", "events", "id", "url"]);
    expect(Object.keys(Delivery?.properties ?? {}).sort()).toEqual([
      "attempts",
      "createdAt",
      "id",
      "lastStatus",
      "nextAttemptAt",
      "status",
      "type",
    ]);
    // Each change type has its webhook, its body the change (SPEC, "Webhooks follow the same log").
    const webhooks = (document as unknown as { webhooks: Record<string, { post: Operation }> }).webhooks;
    for (const type of ["plant.created", "plant.updated", "plant.deleted"]) {
      const body = webhooks[type]?.post.requestBody as { content: Record<string, { schema: { $ref: string } }> };
      expect(body.content["application/json"]?.schema.$ref).toBe("#/components/schemas/Change");
    }
  });
});

describe("Swagger UI at /swagger", () => {
  test("is an HTML page whose assets are served by the service itself", async () => {
    const t = await makeTestApp();
    const page = await t.call("GET", "/swagger");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const asset of assets) {
      expect(asset).toStartWith("/swagger/assets/");
      const response = await t.call("GET", asset);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/(javascript|css)/);
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
    expect(html).toContain("swagger/json");
  });

  test("an unknown asset is a 404 with the Error body", async () => {
    const t = await makeTestApp();
    for (const name of ["secret.txt", "constructor", "__proto__", "..%2Fpackage.json"]) {
      const response = await t.call("GET", `/swagger/assets/${name}`);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: 404 });
    }
  });
});

describe("where the document and the page are served", () => {
  test("/openapi.json and /swagger/json/ are the same document as /swagger/json", async () => {
    const t = await makeTestApp();
    const documentAt = async (path: string) => {
      const response = await t.call("GET", path);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^application\/json/);
      return response.json();
    };
    const a = await documentAt("/openapi.json");
    const b = await documentAt("/swagger/json");
    expect(a).toEqual(b);
    // The trailing slash once served the document with each schema's $id left in.
    expect(await documentAt("/swagger/json/")).toEqual(b);
    expect((a as { info: { title: string } }).info.title).toBe("Plant Store");
  });

  test("/swagger/ with a trailing slash is the page, naming its document and assets by absolute path", async () => {
    const t = await makeTestApp();
    const slash = await t.call("GET", "/swagger/");
    const plain = await t.call("GET", "/swagger");
    expect(slash.status).toBe(200);
    const html = await slash.text();
    expect(html).toBe(await plain.text());
    expect(html).toContain('"url":"/swagger/json"');
    expect(html).toContain('src="/swagger/assets/swagger-ui-bundle.js"');
  });
});

describe("what third-party tools need of the document", () => {
  test("declares OpenAPI 3.1.0 (Portman refuses 3.1.2) and a server, the origin it is served from", async () => {
    const { document } = await fetchDocument();
    const { openapi, servers } = document as unknown as { openapi: string; servers: Array<{ url: string }> };
    expect(openapi).toBe("3.1.0");
    expect(servers).toEqual([expect.objectContaining({ url: "/" })]);
  });

  test("every path parameter has an example its schema accepts (Dredd needs one)", async () => {
    const { document } = await fetchDocument();
    const pathParameters = Object.values(document.paths)
      .flatMap((operations) => Object.values(operations))
      .flatMap((op) => (op.parameters ?? []) as Array<{ in: string; name: string; example?: unknown; schema: object }>)
      .filter((p) => p.in === "path");
    expect(pathParameters.length).toBe(7);
    for (const parameter of pathParameters) {
      expect(Number.isInteger(parameter.example)).toBe(true);
      const { minimum = -Infinity } = parameter.schema as { minimum?: number };
      expect(parameter.example as number).toBeGreaterThanOrEqual(minimum);
    }
  });

  test("the webhook models' integers are plain integers, as the service sends them", async () => {
    const { document } = await fetchDocument();
    const { RegisteredWebhook, Webhook, Delivery } = document.components.schemas;
    expect(RegisteredWebhook?.properties.id).toMatchObject({ type: "integer" });
    expect(Webhook?.properties.id).toMatchObject({ type: "integer" });
    expect(Delivery?.properties.attempts).toMatchObject({ type: "integer" });
    expect(Delivery?.properties.lastStatus).toMatchObject({ type: ["integer", "null"] });
    expect(JSON.stringify(document)).not.toContain('"format":"integer"');
  });

  test("each error response says what it means on its route, and its example shows its status", async () => {
    const { document } = await fetchDocument();
    const errors = (path: string, method: string) =>
      Object.fromEntries(
        Object.entries(operation(document, path, method).responses)
          .filter(([status]) => Number(status) >= 400)
          .map(([status, response]) => [status, response as { description: string; content: object }]),
      );
    for (const [path, operations] of Object.entries(document.paths))
      for (const method of Object.keys(operations))
        for (const [status, response] of Object.entries(errors(path, method))) {
          expect(response.description).not.toBe("Error");
          expect(response.content).toEqual({
            "application/json": {
              schema: { $ref: "#/components/schemas/Error" },
              example: { error: Number(status), message: response.description },
            },
          });
        }
    const register = errors("/webhooks", "post");
    expect(register["409"]?.description).toContain("10 webhook endpoints");
    expect(register["400"]?.description).toContain("WEBHOOK_ALLOW_PRIVATE");
    for (const [path, method] of [
      ["/webhooks/{id}", "delete"],
      ["/webhooks/{id}/deliveries", "get"],
    ] as const) {
      expect(errors(path, method)["404"]?.description).toStartWith("You have no webhook endpoint with this id");
      expect(errors(path, method)["400"]?.description).not.toContain("64-bit");
    }
    for (const webhookOp of [register, errors("/webhooks", "get"), errors("/webhooks/{id}", "delete")])
      for (const response of Object.values(webhookOp)) expect(response.description).not.toContain("plant");
    expect(errors("/plants", "post")["409"]?.description).toStartWith("You already have a plant with this id");
    expect(errors("/plants/{id}", "get")["404"]?.description).toStartWith("You have no plant with this id");
  });

  test("every operation has a summary and a description", async () => {
    const { document } = await fetchDocument();
    for (const operations of Object.values(document.paths))
      for (const op of Object.values(operations)) {
        expect((op as unknown as { summary: string }).summary).toBeTruthy();
        expect((op as unknown as { description: string }).description).toBeTruthy();
      }
  });

  test("the Webhooks entry says it is what your receiver gets, not a route to call", async () => {
    const { document } = await fetchDocument();
    const webhook = (document as unknown as { webhooks: Record<string, Record<string, { description: string }>> })
      .webhooks["/plant/webhook"]?.post;
    expect(webhook?.description).toContain("sends to YOUR receiver");
    expect(webhook?.description).toContain("has no `/plant/webhook` route");
  });
});
