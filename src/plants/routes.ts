import { Elysia } from "elysia";
import type { FaultLog } from "../app";
import { type AuthLimits, bearerAuth } from "../auth/plugin";
import type { TokenStore } from "../auth/tokens";
import { HttpError } from "../http/errors";
import { type BodyLimits, jsonBody } from "../http/json-body";
import { errorModels, errorResponses, modelResponse } from "../http/models";
import type { Metrics } from "../ops/metrics";
import type { RequestNotes } from "../ops/request-id";
import { listAnswer } from "./list-answer";
import { listPlantsQuery, type Plant, plantIdParams, plantModels } from "./model";
import type { PlantQueries } from "./queries";

export interface PlantRoutesDeps {
  plants: PlantQueries;
  tokens: TokenStore;
  limits: AuthLimits;
  body: BodyLimits;
  notes: RequestNotes;
  metrics: Pick<Metrics, "plantCreated" | "plantDeleted">;
  log: FaultLog;
}

/*
 * Responses are documented in `detail` rather than declared as `response` schemas: handlers
 * return values typed from the same models, and skipping Elysia's response validation keeps
 * the hot path lean. The generator also cannot document a body-less 204 from a schema.
 */
export function plantRoutes({ plants, tokens, limits, body: bodyLimits, notes, metrics, log }: PlantRoutesDeps) {
  const faultLoggerFor = (request: Request) => (error: unknown) => {
    log("listing plants failed mid-answer", error, request);
  };
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
      ({ query, user, request }) => {
        // Elysia reads a handler's source and compiles the route as async when it sees
        // "=> f(" or "return f(" (and Bun's transpiler folds `const x = f(); return x` into
        // that), which costs every request a promise. The ternary keeps it synchronous
        // (tests/plants-list.test.ts checks it). A limit within one chunk is the hot path, one
        // statement; anything longer may be streamed (list-answer.ts).
        const limit = query.limit === undefined ? undefined : Number(query.limit);
        // A streamed answer is a Response carrying the same JSON array: typed as one for clients.
        return limit !== undefined && limit <= plants.listChunkSize
          ? plants.listPlants(user.id, limit)
          : (listAnswer(plants, user.id, limit, faultLoggerFor(request)) as Plant[]);
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
