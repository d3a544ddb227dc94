import { describe, expect, test } from "bun:test";
import SwaggerParser from "@apidevtools/swagger-parser";
import { makeTestApp } from "./helpers";

async function fetchDocument() {
  const t = makeTestApp();
  const response = await t.call("GET", "/swagger/json");
  expect(response.status).toBe(200);
  return { t, document: await response.json() };
}

describe("OpenAPI document at /swagger/json", () => {
  test("validates with a standard OpenAPI validator", async () => {
    const { document } = await fetchDocument();
    // validate() dereferences in place; give it a copy so the assertions below see $refs.
    await expect(SwaggerParser.validate(structuredClone(document))).resolves.toBeDefined();
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
    expect(Plant.required).toEqual(["name"]);
    expect(Object.keys(Plant.properties).sort()).toEqual(["name", "tag"]);
    expect(NewPlant.required).toEqual(["id", "name"]);
    expect(NewPlant.properties.id).toMatchObject({ type: "integer", format: "int64" });
    expect(NewPlant.properties.name).toMatchObject({ type: "string", minLength: 1, maxLength: 256 });
    expect(NewPlant.properties.tag).toMatchObject({ type: "string", minLength: 0, maxLength: 256 });
    expect(ErrorSchema.required).toEqual(["error", "message"]);
    expect(ErrorSchema.properties.error.type).toBe("integer");
  });

  test("declares every status the SPEC names on each operation", async () => {
    const { document } = await fetchDocument();
    const statuses = (operation: { responses: Record<string, unknown> }) => Object.keys(operation.responses).sort();
    expect(statuses(document.paths["/plants"].post)).toEqual(["200", "400", "401", "409", "413", "415", "500"]);
    expect(statuses(document.paths["/plants"].get)).toEqual(["200", "400", "401", "500"]);
    expect(statuses(document.paths["/plants/{id}"].delete)).toEqual(["204", "400", "401", "404", "500"]);
    expect(document.paths["/plants/{id}"].delete.responses["204"].content).toBeUndefined();
    expect(document.paths["/plants"].post.requestBody.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/NewPlant",
    });
    expect(document.paths["/plants"].get.parameters).toEqual([
      expect.objectContaining({
        name: "limit",
        in: "query",
        required: false,
        schema: expect.objectContaining({ type: "integer", minimum: 0, maximum: 2147483647 }),
      }),
    ]);
  });

  test("documents only the API: the Swagger routes themselves are hidden", async () => {
    const { document } = await fetchDocument();
    expect(Object.keys(document.paths).sort()).toEqual(["/plants", "/plants/{id}"]);
  });
});

describe("Swagger UI at /swagger", () => {
  test("is an HTML page whose assets are served by the service itself", async () => {
    const t = makeTestApp();
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
    const t = makeTestApp();
    for (const name of ["secret.txt", "constructor", "__proto__", "..%2Fpackage.json"]) {
      const response = await t.call("GET", `/swagger/assets/${name}`);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: 404 });
    }
  });
});
