import { Elysia } from "elysia";
import { type AuthDeps, bearerAuth } from "../auth/plugin";
import type { Plant } from "../core/plant";
import type { PlantChange, PlantStore } from "../core/stores";
import { HttpError, jsonHeaders } from "../http/errors";
import { jsonBody } from "../http/json-body";
import { errorModels, routeErrors } from "../http/models";
import { ifMatchHolds, ifNoneMatchMatches, isAnyTag, preconditionFailed } from "../http/preconditions";
import type { Metrics } from "../ops/metrics";
import { fieldsOf, plantJson } from "./fields";
import { FIELDS_DOC, plantETag, plantIdParams, plantModels, VALUE_FIELDS } from "./model";
import {
  BAD_ID,
  BAD_ID_OR_BODY,
  CHANGED,
  ETAG_HEADER,
  headerParameter,
  IF_MATCH,
  NO_SUCH_PLANT,
  plantAnswer,
} from "./route-docs";

export interface OnePlantDeps extends AuthDeps {
  plants: PlantStore;
  metrics: Pick<Metrics, "plantDeleted">;
}

/** The authenticated /plants routes: one auth, one set of models. */
export const plantBase = (deps: Parameters<typeof bearerAuth>[0]) =>
  new Elysia({ prefix: "/plants", tags: ["plants"] }).use(bearerAuth(deps)).model({ ...plantModels, ...errorModels });

const notFound = () => new HttpError(404, "id: you have no plant with this id");

/** The plant an If-Match write expects; the write checks it again itself, so two racing writes cannot both pass. */
async function expectedPlant(plants: PlantStore, ownerId: number, id: bigint, request: Request) {
  const header = request.headers.get("if-match");
  if (header === null || isAnyTag(header)) return undefined;
  const current = await plants.getPlant(ownerId, id);
  if (!current) throw notFound();
  if (!ifMatchHolds(header, plantETag(id, current))) throw preconditionFailed();
  return current;
}

/** A write that found nothing to change: the plant is gone (404), or it changed since it was read (412). */
async function missed(plants: PlantStore, ownerId: number, id: bigint, expected: Plant | undefined): Promise<never> {
  if (expected && (await plants.getPlant(ownerId, id))) throw preconditionFailed();
  throw notFound();
}

export function onePlantRoutes(app: ReturnType<typeof plantBase>, { plants, body: bodyLimits, metrics }: OnePlantDeps) {
  const update = async (
    ownerId: number,
    id: bigint,
    change: PlantChange,
    request: Request,
    set: { headers: Record<string, unknown> },
  ) => {
    const expected = await expectedPlant(plants, ownerId, id, request);
    const plant =
      (await plants.updatePlant(ownerId, id, change, expected)) ?? (await missed(plants, ownerId, id, expected));
    set.headers.etag = plantETag(id, plant);
    return plant;
  };
  const updateErrors = routeErrors({ 400: BAD_ID_OR_BODY, 404: NO_SUCH_PLANT, 412: CHANGED });
  return app
    .get(
      "/:id",
      async ({ params, user, request, set }) => {
        const fields = fieldsOf(request.url);
        const plant = await plants.getPlant(user.id, params.id);
        if (!plant) throw notFound();
        const etag = plantETag(params.id, plant);
        set.headers.etag = etag;
        const ifNoneMatch = request.headers.get("if-none-match");
        // Typed as the Plant it stands for (as the long list is): a 304 comes only to a client that asked.
        if (ifNoneMatch !== null && ifNoneMatchMatches(ifNoneMatch, etag))
          return new Response(null, { status: 304 }) as unknown as Plant;
        if (fields === undefined) return plant;
        return new Response(plantJson(fields, params.id, plant), { headers: jsonHeaders() }) as unknown as Plant;
      },
      {
        scope: "plants:read",
        params: plantIdParams,
        detail: {
          summary: "Get one of your plants",
          description:
            "Its name and tag (or the `fields` you ask for), with its ETag; 304 when your If-None-Match holds it.",
          operationId: "getPlant",
          "x-parameters": [
            {
              name: "fields",
              in: "query",
              required: false,
              example: "id,name",
              schema: { type: "string", ...FIELDS_DOC },
            },
            headerParameter("If-None-Match", "The ETag(s) you hold: when one is the plant's, 304 without a body"),
          ],
          responses: {
            200: plantAnswer("The plant"),
            304: { description: "The plant has not changed from the ETag you sent", headers: ETAG_HEADER },
            ...routeErrors({ 400: `${BAD_ID}, or \`fields\` is not a subset of id,name,tag`, 404: NO_SUCH_PLANT }),
          },
        },
      },
    )
    .put(
      "/:id",
      ({ params, user, body, request, set }) =>
        update(user.id, params.id, Object.fromEntries(VALUE_FIELDS.map((f) => [f, body[f] ?? null])), request, set),
      {
        scope: "plants:write",
        ...jsonBody(bodyLimits),
        params: plantIdParams,
        body: "PlantReplacement",
        detail: {
          summary: "Replace one of your plants",
          description: "The plant becomes the body: a tag left out is removed; an `id` in the body is ignored.",
          operationId: "replacePlant",
          "x-parameters": [IF_MATCH],
          responses: { 200: plantAnswer("The plant as stored now"), ...updateErrors },
        },
      },
    )
    .patch("/:id", ({ params, user, body, request, set }) => update(user.id, params.id, body, request, set), {
      scope: "plants:write",
      ...jsonBody(bodyLimits),
      params: plantIdParams,
      body: "PlantPatch",
      detail: {
        summary: "Change some fields of one of your plants",
        description:
          'A JSON merge patch (RFC 7396): `name` sets the name, `tag` sets the tag and `"tag": null` removes it; ' +
          "keys left out stay as they are, other keys are ignored, `{}` changes nothing.",
        operationId: "updatePlant",
        "x-parameters": [IF_MATCH],
        "x-media-types": ["application/merge-patch+json", "application/json"],
        responses: { 200: plantAnswer("The plant as stored now"), ...updateErrors },
      },
    })
    .delete(
      "/:id",
      async ({ params, user, request, set }) => {
        const expected = await expectedPlant(plants, user.id, params.id, request);
        if (!(await plants.deletePlant(user.id, params.id, expected)))
          await missed(plants, user.id, params.id, expected);
        metrics.plantDeleted();
        set.status = 204;
      },
      {
        scope: "plants:write",
        params: plantIdParams,
        detail: {
          summary: "Delete one of your plants",
          description: "Gone for good; with If-Match, only if it has not changed since you read it.",
          operationId: "deletePlant",
          "x-parameters": [IF_MATCH],
          responses: {
            204: { description: "Deleted" },
            ...routeErrors({ 400: BAD_ID, 404: NO_SUCH_PLANT, 412: CHANGED }),
          },
        },
      },
    );
}
