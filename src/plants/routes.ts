import type { FaultLog } from "../core/fault";
import type { Plant } from "../core/plant";
import { type FaultResponder, HttpError } from "../http/errors";
import { jsonBody } from "../http/json-body";
import { linkHeader, modelResponse, routeErrors } from "../http/models";
import { pagedAnswer } from "../http/pager";
import { checkQueryNames } from "../http/query-names";
import type { Metrics } from "../ops/metrics";
import { parseFields } from "./fields";
import { IDEMPOTENCY_DOC, idempotencyKeyOf, keyedCreates, TAKEN_MESSAGE } from "./idempotency";
import { plantPages } from "./list-answer";
import { listPlantsQuery, plantETag } from "./model";
import { type OnePlantDeps, onePlantRoutes, plantBase } from "./one-plant-routes";
import { ETAG_HEADER } from "./route-docs";

const LIST_PARAMETERS_HINT =
  "this operation takes limit, after, tag and fields. To page, give limit and follow the Link header, or pass after=<the last id you have>";

export interface PlantRoutesDeps extends OnePlantDeps {
  metrics: Pick<Metrics, "plantCreated" | "plantDeleted">;
  log: FaultLog;
  /** Answers a fault the list met after its handler returned (Elysia's error hook never sees it). */
  answerFault: FaultResponder;
  idempotency: { ttlHours: number; clock: () => number };
}

/*
 * Responses are documented in `detail`, not declared as `response` schemas: skipping response
 * validation keeps the hot path lean, and the generator cannot document a body-less 204.
 */
export function plantRoutes(deps: PlantRoutesDeps) {
  const { plants, body: bodyLimits, metrics, log, idempotency, answerFault } = deps;
  const faultLogFor = (request: Request) => (error: unknown) => log("listing plants failed mid-answer", error, request);
  const answerFor = (request: Request) => (error: unknown) => answerFault(error, request);
  const keyed = keyedCreates(plants, idempotency.ttlHours, idempotency.clock);
  return onePlantRoutes(plantBase(deps), deps)
    .post(
      "",
      async ({ body, user, set, request }) => {
        const key = idempotencyKeyOf(request);
        // Typed as the Plant it stands for (as the long list is): the kept answer's exact bytes.
        if (key !== undefined) return (await keyed(user.id, body, key, metrics.plantCreated)) as unknown as Plant;
        const plant = await plants.createPlant(user.id, body);
        if (!plant) throw new HttpError(409, TAKEN_MESSAGE);
        metrics.plantCreated();
        set.headers.etag = plantETag(body.id, plant);
        return plant;
      },
      {
        scope: "plants:write",
        ...jsonBody(bodyLimits),
        body: "NewPlant",
        detail: {
          summary: "Create a plant",
          description: "Stores the plant under the id you choose; an id you already use is a 409, never a change.",
          operationId: "addPlant",
          "x-parameters": [IDEMPOTENCY_DOC.parameter],
          responses: {
            200: {
              ...modelResponse("The plant as stored", "Plant"),
              headers: { ...ETAG_HEADER, ...IDEMPOTENCY_DOC.replayedHeader },
            },
            ...routeErrors({
              400: "The body breaks a rule of NewPlant (the message names the field): `id` missing or not a signed 64-bit integer, `name` not 1 to 256 characters…; or the Idempotency-Key is not 1 to 255 visible ASCII characters",
            }),
            ...IDEMPOTENCY_DOC.responses,
          },
        },
      },
    )
    .get(
      "",
      // Written so that Elysia compiles it synchronous (no `async`, no `return f(…)` nor `=> f(…)`):
      // a page read at once is then answered at once; a promise carries its own fault answer.
      ({ query, user, request, set }) => {
        checkQueryNames(request.url, listPlantsQuery, LIST_PARAMETERS_HINT);
        const list = {
          ownerId: user.id,
          filter: { after: query.after === undefined ? undefined : BigInt(query.after), tag: query.tag },
          limit: query.limit === undefined ? undefined : Number(query.limit),
          fields: query.fields === undefined ? undefined : parseFields(query.fields),
        };
        const asked = { ...list, after: list.filter.after, onFault: faultLogFor(request) };
        let answer = pagedAnswer(plantPages(plants, list), asked, set.headers);
        if (answer instanceof Promise) answer = answer.catch(answerFor(request));
        // Typed as the Plant[] it stands for, as the long list always was.
        return answer as unknown as Plant[];
      },
      {
        scope: "plants:read",
        query: listPlantsQuery,
        detail: {
          summary: "List your plants",
          description:
            "Your plants ordered by id ascending, at most `limit` of them, optionally only those after an id and " +
            "with a tag; `fields` chooses what each plant carries (e.g. `fields=id,name` to learn the ids). When `limit` is given and more plants match past the last one returned, the `Link` header " +
            'names the next page (`rel="next"`); follow it until there is none.',
          operationId: "listPlants",
          responses: {
            200: {
              ...modelResponse("Your plants, by id ascending", "Plant", { array: true }),
              headers: linkHeader(
                'The next page, when `limit` was given and more plants match: `</plants?limit=20&after=42>; rel="next"` (relative; `tag` kept, percent-encoded, and `fields`)',
              ),
            },
            ...routeErrors({
              400: "A query parameter is out of its range, unknown or given twice (the message names it)",
            }),
          },
        },
      },
    );
}
