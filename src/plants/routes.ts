import { Elysia } from "elysia";
import { type AuthLimits, bearerAuth } from "../auth/plugin";
import type { TokenStore } from "../auth/tokens";
import { HttpError } from "../http/errors";
import { type BodyLimits, jsonBody } from "../http/json-body";
import { errorModels, errorResponses, modelResponse } from "../http/models";
import type { Metrics } from "../ops/metrics";
import type { RequestNotes } from "../ops/request-id";
import { listPlantsQuery, plantIdParams, plantModels } from "./model";
import type { PlantQueries } from "./queries";

export interface PlantRoutesDeps {
  plants: PlantQueries;
  tokens: TokenStore;
  limits: AuthLimits;
  body: BodyLimits;
  notes: RequestNotes;
  metrics: Pick<Metrics, "plantCreated" | "plantDeleted">;
}

/*
 * Responses are documented in `detail` rather than declared as `response` schemas: handlers
 * return values typed from the same models, and skipping Elysia's response validation keeps
 * the hot path lean. The generator also cannot document a body-less 204 from a schema.
 */
export function plantRoutes({ plants, tokens, limits, body: bodyLimits, notes, metrics }: PlantRoutesDeps) {
  return new Elysia({ prefix: "/plants" })
    .use(bearerAuth(tokens, limits, notes))
    .model({ ...plantModels, ...errorModels })
    .post(
      "",
      async ({ body, user }) => {
        const plant = await plants.createPlant(user.id, body);
        if (!plant)
          throw new HttpError(409, "id: you already have a plant with this id; delete it first to replace it");
        metrics.plantCreated();
        return plant;
      },
      {
        ...jsonBody(bodyLimits),
        body: "NewPlant",
        detail: {
          summary: "Create a plant",
          operationId: "addPlant",
          tags: ["plants"],
          responses: {
            200: modelResponse("The plant as stored", "Plant"),
            ...errorResponses(400, 401, 408, 409, 413, 415, 429, 500, 503, 507),
          },
        },
      },
    )
    .get(
      "",
      ({ query, user }) => {
        // Elysia reads a handler's source and compiles the route as async when it sees
        // "=> f(" or "return f(" (and Bun's transpiler folds `const x = f(); return x` into
        // that), which costs every request a promise. The ternary keeps it synchronous.
        return query.limit === undefined ? plants.listPlants(user.id) : plants.listPlants(user.id, Number(query.limit));
      },
      {
        query: listPlantsQuery,
        detail: {
          summary: "List your plants",
          description: "Your plants ordered by id ascending, at most `limit` of them.",
          operationId: "listPlants",
          tags: ["plants"],
          responses: {
            200: modelResponse("Your plants, by id ascending", "Plant", { array: true }),
            ...errorResponses(400, 401, 429, 500, 503),
          },
        },
      },
    )
    .delete(
      "/:id",
      async ({ params, user, set }) => {
        if (!(await plants.deletePlant(user.id, params.id)))
          throw new HttpError(404, "id: you have no plant with this id");
        metrics.plantDeleted();
        set.status = 204;
      },
      {
        params: plantIdParams,
        detail: {
          summary: "Delete one of your plants",
          operationId: "deletePlant",
          tags: ["plants"],
          responses: { 204: { description: "Deleted" }, ...errorResponses(400, 401, 404, 429, 500, 503, 507) },
        },
      },
    );
}
